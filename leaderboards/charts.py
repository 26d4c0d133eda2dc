"""A horizontal bar chart of rates in [0, 1] drawn on the server as inline SVG (style of ``tasks.charts``).

Used for a model's accuracy per tag (e.g. per HateCheck functionality). Geometry, so tests can check it:

    y of bar i    = TOP + i * ROW
    bar width of v = v * (width - LABEL_WIDTH - RIGHT)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from tasks.charts import GRID, PALETTE, _fmt

LABEL_WIDTH, RIGHT, TOP, BOTTOM, ROW, BAR = 260, 56, 24, 24, 20, 14


@dataclass(frozen=True)
class Bar:
    """One drawn bar: its category label, value (a rate in [0, 1]), item count and SVG width."""

    label: str
    value: float
    n: int | None
    width: float


@dataclass(frozen=True)
class BarChart:
    """The bars and the ``svg`` markup, safe to put in a template."""

    bars: list[Bar]
    svg: SafeString


def bar_chart(
    items: Sequence[tuple[str, float, int | None]], *, width: int = 640, title: str = ""
) -> BarChart:
    """Draw one horizontal bar per ``(label, rate, n)``, in the order given.

    Args:
        items: label, a rate in [0, 1], and the number of items behind it (None if unknown).
        width: the SVG's width in pixels; the height follows from the number of bars.
        title: the accessible name (``aria-label`` and ``<title>``).

    Raises:
        ValueError: a rate outside [0, 1].
    """
    plot = width - LABEL_WIDTH - RIGHT
    height = TOP + ROW * len(items) + BOTTOM
    bars = []
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart bar-chart" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
    ]
    bottom = TOP + ROW * len(items)
    for g in GRID:
        x = _fmt(LABEL_WIDTH + g * plot)
        parts.append(
            f'<line class="grid" x1="{x}" y1="{TOP - 4}" x2="{x}" y2="{bottom}" stroke="#ccc" stroke-width="1"/>'
            f'<text x="{x}" y="{bottom + 14}" text-anchor="middle" font-size="11">{int(g * 100)}%</text>'
        )
    for i, (label, value, n) in enumerate(items):
        if not 0 <= value <= 1:
            raise ValueError(f"{label!r}: {value!r} is not a rate in [0, 1]")
        y = TOP + i * ROW
        bar = Bar(label=str(label), value=float(value), n=n, width=value * plot)
        bars.append(bar)
        short = bar.label if len(bar.label) <= 40 else bar.label[:39] + "…"
        count = "" if n is None else f" (n={n})"
        parts.append(
            f'<text x="{LABEL_WIDTH - 6}" y="{_fmt(y + BAR / 2)}" text-anchor="end" dominant-baseline="middle" '
            f'font-size="11">{escape(short)}</text>'
            f'<rect class="bar" x="{LABEL_WIDTH}" y="{y}" width="{_fmt(bar.width)}" height="{BAR}" '
            f'fill="{PALETTE[0]}"><title>{escape(bar.label)}: {value:.1%}{count}</title></rect>'
            f'<text x="{_fmt(LABEL_WIDTH + bar.width + 4)}" y="{_fmt(y + BAR / 2)}" dominant-baseline="middle" '
            f'font-size="11">{value:.0%}</text>'
        )
    parts.append("</svg>")
    return BarChart(bars=bars, svg=mark_safe("".join(parts)))
