"""Template helpers of the evaluation pages: percentages, and the judge calibration box of the usage page."""

from django import template

from ..reports import calibration_report

register = template.Library()


@register.filter
def percent(value) -> str:
    """0.4567 -> '45.7%'; None -> '—'."""
    if value is None:
        return "—"
    return f"{value * 100:.1f}%"


@register.inclusion_tag("evals/_calibration.html")
def judge_calibration(workspace) -> dict:
    """The judge's accuracy and false-pass / false-fail rates from recorded truths, for the usage page."""
    return {"report": calibration_report(workspace) if workspace is not None else None}
