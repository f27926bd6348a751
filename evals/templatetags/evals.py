"""Template helpers of the evaluation pages: percentages, and the judge calibration box of the usage page."""

from typing import Any

from django import template

from agent_platform.models import Workspace

from ..reports import calibration_report

register = template.Library()


@register.filter
def percent(value: float | None) -> str:
    """0.4567 -> '45.7%'; None -> '—'."""
    if value is None:
        return "—"
    return f"{value * 100:.1f}%"


@register.inclusion_tag("evals/_calibration.html")
def judge_calibration(workspace: Workspace | None) -> dict[str, Any]:
    """The judge's accuracy and false-pass / false-fail rates from recorded truths, for the usage page."""
    return {"report": calibration_report(workspace) if workspace is not None else None}
