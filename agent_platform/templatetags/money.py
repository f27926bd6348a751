"""Dollar amounts in templates, written by the one money module (agent_platform.lib.money)."""

from decimal import Decimal

from django import template

from agent_platform.lib.money import format_usd

register = template.Library()


@register.filter
def usd(value: Decimal | int | str | None) -> str:
    """$1.25, $0.000125: cents always, more places only when the amount uses them."""
    return format_usd(None if value is None or value == "" else Decimal(value))
