"""agent_platform.lib.money: the one writer of dollar amounts."""

from decimal import Decimal

import pytest

from agent_platform.lib.money import exact_usd, exact_usd_or_none, format_usd, rounded_usd


def test_exact_dollars_have_no_trailing_zeros_no_exponent_and_say_zero_as_0():
    assert exact_usd(Decimal("0.1000")) == "0.1"
    assert exact_usd(Decimal("10.0000")) == "10"
    assert exact_usd(Decimal("0.00012346")) == "0.00012346"
    assert exact_usd(Decimal("0E-8")) == "0"
    assert exact_usd(Decimal("1") / Decimal("3"), places=8) == "0.33333333"
    assert exact_usd_or_none(None) is None and exact_usd_or_none(Decimal("5.00")) == "5"


def test_dollars_for_people_show_cents_and_more_places_only_when_used():
    assert format_usd(Decimal("49.0")) == "$49.00"
    assert format_usd(Decimal("1.8750")) == "$1.875"
    assert format_usd(Decimal("1234.5")) == "$1,234.50"
    assert format_usd(None) == "-"


def test_a_running_cost_in_a_sentence_has_four_places_with_its_zeros():
    assert rounded_usd(Decimal("0.8")) == "$0.8000"
    assert rounded_usd(Decimal("0.00012346")) == "$0.0001"
    assert rounded_usd(0.5) == "$0.5000"


@pytest.mark.parametrize(
    ("amount", "written"),
    [
        (Decimal("0E-8"), "0"),
        (Decimal("-0.00000000"), "0"),
        (Decimal("0.00010000"), "0.0001"),
        (Decimal("12.50000000"), "12.5"),
        (Decimal("1.2E+3"), "1200"),
        (Decimal("0.00000001"), "0.00000001"),
        (0, "0"),
        ("3.10", "3.1"),
    ],
)
def test_an_amount_is_written_in_plain_digits(amount, written):
    assert exact_usd(amount) == written
