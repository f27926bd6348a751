"""The agent's own verdict on a run as every page shows it (the run page, the runs list, a batch's runs, triage): one
reading, so no two pages say different things of one run."""

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString

from runs.models import Run
from runs.presenters import agent_verdict

register = template.Library()


@register.simple_tag
def agent_verdict_badge(run: Run | None) -> SafeString:
    label, css = agent_verdict(run)
    return format_html('<span class="badge {}" data-agent-verdict="{}">{}</span>', css, label, label)
