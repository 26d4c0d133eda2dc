"""A horizontal bar chart of rates in [0, 1] drawn on the server as inline SVG (style of ``tasks.charts``).

Used for a model's accuracy per tag (e.g. per HateCheck functionality). Geometry, so tests can check it:

    y of bar i    = TOP + i * ROW
    bar width of v = v * (width - LABEL_WIDTH - RIGHT)
    x of the overall line at v = LABEL_WIDTH + v * (width - LABEL_WIDTH - RIGHT)
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
    """One drawn bar: its category label, value (a rate in [0, 1]), item count, SVG width, and the
    text drawn beside it (``text``: the label unless the caller gave a readable name)."""

    label: str
    value: float
    n: int | None
    width: float
    text: str = ""


@dataclass(frozen=True)
class BarChart:
    """The bars, the x of the overall line (None without one) and the ``svg`` markup, safe to put in
    a template."""

    bars: list[Bar]
    svg: SafeString
    overall_x: float | None = None


def bar_chart(
    items: Sequence[tuple[str, float, int | None]],
    *,
    width: int = 640,
    title: str = "",
    names: dict[str, str] | None = None,
    overall: float | None = None,
    overall_label: str = "overall",
) -> BarChart:
    """Draw one horizontal bar per ``(label, rate, n)``, in the order given, and optionally a dashed
    vertical line at the ``overall`` rate (the whole dataset's score) labelled ``overall_label``.

    Args:
        items: label, a rate in [0, 1], and the number of items behind it (None if unknown).
        width: the SVG's width in pixels; the height follows from the number of bars.
        title: the accessible name (``aria-label`` and ``<title>``).
        names: label -> the readable text drawn for it (labels not in it are drawn as they are).
        overall: a rate in [0, 1] for the dashed line, or None for no line.
        overall_label: the line's label, followed by the rate as a percentage.

    Raises:
        ValueError: a rate (or ``overall``) outside [0, 1].
    """
    names = names or {}
    if overall is not None and not 0 <= overall <= 1:
        raise ValueError(f"overall: {overall!r} is not a rate in [0, 1]")
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
        bar = Bar(
            label=str(label),
            value=float(value),
            n=n,
            width=value * plot,
            text=names.get(str(label), str(label)),
        )
        bars.append(bar)
        short = bar.text if len(bar.text) <= 40 else bar.text[:39] + "…"
        count = "" if n is None else f" (n={n})"
        parts.append(
            f'<text x="{LABEL_WIDTH - 6}" y="{_fmt(y + BAR / 2)}" text-anchor="end" dominant-baseline="middle" '
            f'font-size="11">{escape(short)}</text>'
            f'<rect class="bar" x="{LABEL_WIDTH}" y="{y}" width="{_fmt(bar.width)}" height="{BAR}" '
            f'fill="{PALETTE[0]}"><title>{escape(bar.text)}: {value:.1%}{count}</title></rect>'
            f'<text x="{_fmt(LABEL_WIDTH + bar.width + 4)}" y="{_fmt(y + BAR / 2)}" dominant-baseline="middle" '
            f'font-size="11">{value:.0%}</text>'
        )
    overall_x = None
    if overall is not None:
        overall_x = LABEL_WIDTH + overall * plot
        x = _fmt(overall_x)
        anchor = "end" if overall > 0.5 else "start"
        shift = -4 if overall > 0.5 else 4
        parts.append(
            f'<line class="overall" x1="{x}" y1="{TOP - 8}" x2="{x}" y2="{bottom}" stroke="#b00020" '
            f'stroke-width="1.5" stroke-dasharray="5 3"><title>{escape(overall_label)}: {overall:.1%}</title></line>'
            f'<text class="overall-label" x="{_fmt(overall_x + shift)}" y="{TOP - 10}" text-anchor="{anchor}" '
            f'font-size="11" fill="#b00020">{escape(overall_label)} {overall:.1%}</text>'
        )
    parts.append("</svg>")
    return BarChart(bars=bars, svg=mark_safe("".join(parts)), overall_x=overall_x)
