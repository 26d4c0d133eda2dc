"""Money for display and files (crowd pay, cost per round): ``Decimal`` rounded half-up to two places,
only at the edge; stored and summed amounts keep their full precision."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


def two_places(amount: Decimal) -> Decimal:
    """``amount`` rounded half-up to cents (``Decimal("0.125")`` → ``Decimal("0.13")``)."""
    return Decimal(amount).quantize(CENT, rounding=ROUND_HALF_UP)


def fmt(amount: Decimal) -> str:
    """``amount`` as text with exactly two decimals, half-up (``"12.60"``, ``"-0.50"``)."""
    return f"{two_places(amount):.2f}"
