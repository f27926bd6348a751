"""Dollar amounts as the API and the pages write them: exact decimal strings for machines, $1.25 for people, and
$0.0123 where a running cost is told in a sentence."""

from decimal import Decimal


def exact_usd(amount: Decimal | int | str, places: int | None = None) -> str:
    """An exact decimal string without trailing zeros or exponent: 0.1, 10, 0.00012346, 0 (never a float, never
    "0E-8" or "-0"), so a column of them sums to the total. `places` rounds first, for amounts computed by division."""
    value = Decimal(amount)
    if places is not None:
        value = value.quantize(Decimal(1).scaleb(-places))
    if not value:
        return "0"
    return format(value.normalize(), "f")


def exact_usd_or_none(amount: Decimal | None) -> str | None:
    return None if amount is None else exact_usd(amount)


def format_usd(value: Decimal | None) -> str:
    """A price as people write it: $49.00, $0.30, $1.875 (cents always, more places only when they are used)."""
    if value is None:
        return "-"
    amount = Decimal(str(value))
    exponent = amount.normalize().as_tuple().exponent
    # A finite amount's exponent is an int (the letters mark NaN and infinities, which prices never are).
    places = max(2, -exponent) if isinstance(exponent, int) else 2
    return f"${amount:,.{places}f}"


def rounded_usd(amount: Decimal | float) -> str:
    """A running cost as a notice, a refusal or a chart's tooltip tells it: four places, zeros kept ($0.8000,
    $0.0123), where the stored eight places would be noise and the places line up from one message to the next."""
    return f"${amount:.4f}"
