"""Charts drawn on the server as inline SVG: no JavaScript, no charting library, no CDN.

``rate_chart`` plots rates in [0, 1] (MER, vMER, ...) per category (rounds) as lines with markers.
A ``None`` value is a gap: no marker and no line through it (an imported round has no live verdicts,
which is not the same as a rate of 0). The geometry is plain arithmetic so tests can check the points:

    x of category i (of n) = LEFT + (i + 0.5) * (width - LEFT - RIGHT) / n
    y of value v           = TOP + (1 - v) * (height - TOP - BOTTOM)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

LEFT, RIGHT, TOP, BOTTOM = 48, 16, 28, 44
GRID = (0.0, 0.25, 0.5, 0.75, 1.0)
# Colour-blind-safe pair (Okabe-Ito blue and vermilion), plus more for further series.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00")
DASHES = ("", "6 3", "2 2", "8 3 2 3", "")


@dataclass(frozen=True)
class Point:
    """One plotted value: its SVG coordinates, the value and its category label."""

    x: float
    y: float
    value: float
    label: str
    index: int


@dataclass(frozen=True)
class Series:
    """A named line: one value (or ``None`` for no value) per category, and optionally one 95% interval
    ``(low, high)`` (or ``None``) per category, drawn as a whisker through the point."""

    name: str
    values: Sequence[float | None]
    intervals: Sequence[tuple[float, float] | None] | None = None


@dataclass(frozen=True)
class Chart:
    """A built chart: its points per series name, and ``svg`` markup safe to put in a template."""

    width: int
    height: int
    labels: list[str]
    points: dict[str, list[Point]] = field(default_factory=dict)
    svg: SafeString = mark_safe("")

    @property
    def is_empty(self) -> bool:
        """True when no series has a single value to plot."""
        return not any(self.points.values())


def _fmt(number: float) -> str:
    """Coordinates with at most two decimals and no trailing zeros (``12.5``, ``40``)."""
    text = f"{number:.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def x_of(index: int, count: int, width: int) -> float:
    """The x coordinate of the centre of category ``index`` out of ``count``."""
    return LEFT + (index + 0.5) * (width - LEFT - RIGHT) / count


def y_of(value: float, height: int) -> float:
    """The y coordinate of a rate ``value`` (0 at the bottom of the plot area, 1 at its top)."""
    return TOP + (1 - value) * (height - TOP - BOTTOM)


def rate_chart(
    labels: Sequence[str],
    series: Sequence[Series],
    *,
    width: int = 480,
    height: int = 240,
    title: str = "",
    x_title: str = "",
) -> Chart:
    """Build a line chart of rates in [0, 1] over categorical ``labels``.

    Args:
        labels: one label per category (x axis), e.g. ``["1", "2", "3"]`` for rounds.
        series: lines to draw; each has one value per label, ``None`` for "nothing to plot here", and
            optionally an interval per label (a whisker from low to high, with its own ``<title>``).
        width, height: the SVG's size in pixels.
        title: an accessible name for the chart (``aria-label`` and ``<title>``).
        x_title: a caption under the x axis.

    Returns:
        A ``Chart`` with the points' coordinates per series and the SVG markup.

    Raises:
        ValueError: when a series does not have one value (or interval) per label, a value lies outside
            [0, 1], or an interval is not ``0 <= low <= high <= 1``.
    """
    labels = [str(label) for label in labels]
    n = len(labels)
    points: dict[str, list[Point]] = {}
    for s in series:
        if len(s.values) != n:
            raise ValueError(f"series {s.name!r} has {len(s.values)} values for {n} labels")
        row = []
        for i, value in enumerate(s.values):
            if value is None:
                continue
            if not 0 <= value <= 1:
                raise ValueError(f"series {s.name!r}: {value!r} is not a rate in [0, 1]")
            row.append(
                Point(
                    x=x_of(i, n, width), y=y_of(value, height), value=float(value), label=labels[i], index=i
                )
            )
        points[s.name] = row
        if s.intervals is not None:
            if len(s.intervals) != n:
                raise ValueError(f"series {s.name!r} has {len(s.intervals)} intervals for {n} labels")
            for interval in s.intervals:
                if interval is not None and not 0 <= interval[0] <= interval[1] <= 1:
                    raise ValueError(f"series {s.name!r}: {interval!r} is not an interval in [0, 1]")

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
    ]
    plot_right = width - RIGHT
    for g in GRID:
        y = _fmt(y_of(g, height))
        parts.append(
            f'<line class="grid" x1="{LEFT}" y1="{y}" x2="{plot_right}" y2="{y}" '
            f'stroke="#ccc" stroke-width="1"/>'
            f'<text x="{LEFT - 6}" y="{y}" text-anchor="end" dominant-baseline="middle" '
            f'font-size="11">{int(g * 100)}%</text>'
        )
    axis_y = _fmt(y_of(0, height))
    for i, label in enumerate(labels):
        parts.append(
            f'<text x="{_fmt(x_of(i, n, width))}" y="{_fmt(float(axis_y) + 16)}" text-anchor="middle" '
            f'font-size="11">{escape(label)}</text>'
        )
    if x_title:
        parts.append(
            f'<text x="{_fmt((LEFT + plot_right) / 2)}" y="{height - 6}" text-anchor="middle" '
            f'font-size="11">{escape(x_title)}</text>'
        )

    for k, s in enumerate(series):
        colour, dash = PALETTE[k % len(PALETTE)], DASHES[k % len(DASHES)]
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        # A line joins neighbouring categories only; a None breaks it.
        run: list[Point] = []
        previous = None
        for p in points[s.name]:
            if previous is not None and p.index != previous.index + 1:
                parts.append(_polyline(run, colour, dash_attr))
                run = []
            run.append(p)
            previous = p
        parts.append(_polyline(run, colour, dash_attr))
        for p in points[s.name]:
            interval = s.intervals[p.index] if s.intervals is not None else None
            if interval is not None:
                parts.append(_whisker(p, interval, height, colour, s.name))
            parts.append(
                f'<circle class="point" data-series="{escape(s.name)}" cx="{_fmt(p.x)}" cy="{_fmt(p.y)}" '
                f'r="4" fill="{colour}"><title>{escape(s.name)} {escape(p.label)}: '
                f"{p.value:.1%}</title></circle>"
            )
        legend_x = LEFT + 8 + k * 90
        parts.append(
            f'<line x1="{legend_x}" y1="12" x2="{legend_x + 18}" y2="12" stroke="{colour}" '
            f'stroke-width="2"{dash_attr}/><text x="{legend_x + 22}" y="12" '
            f'dominant-baseline="middle" font-size="11">{escape(s.name)}</text>'
        )
    parts.append("</svg>")
    return Chart(width=width, height=height, labels=labels, points=points, svg=mark_safe("".join(parts)))


def _whisker(p: Point, interval: tuple[float, float], height: int, colour: str, name: str) -> str:
    """A vertical line from the interval's low to its high through ``p``, with 8-pixel caps."""
    x, top, bottom = _fmt(p.x), _fmt(y_of(interval[1], height)), _fmt(y_of(interval[0], height))
    left, right = _fmt(p.x - 4), _fmt(p.x + 4)
    return (
        f'<g class="interval" data-series="{escape(name)}" stroke="{colour}" stroke-width="1.5">'
        f"<title>{escape(name)} {escape(p.label)}: 95% interval {interval[0]:.1%} to {interval[1]:.1%}</title>"
        f'<line x1="{x}" y1="{top}" x2="{x}" y2="{bottom}"/>'
        f'<line x1="{left}" y1="{top}" x2="{right}" y2="{top}"/>'
        f'<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}"/></g>'
    )


def _polyline(run: list[Point], colour: str, dash_attr: str) -> str:
    if len(run) < 2:
        return ""
    coords = " ".join(f"{_fmt(p.x)},{_fmt(p.y)}" for p in run)
    return f'<polyline points="{coords}" fill="none" stroke="{colour}" stroke-width="2"{dash_attr}/>'


def _nice_top(largest: float) -> float:
    """The smallest 1, 2 or 5 times a power of ten at or above ``largest`` (the chart's top gridline)."""
    if largest <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(largest))
    for step in (1, 2, 5, 10):
        if largest <= step * power:
            return float(step * power)
    return float(10 * power)


def amount_chart(
    labels: Sequence[str],
    values: Sequence[float | None],
    *,
    unit: str,
    width: int = 480,
    height: int = 240,
    title: str = "",
    x_title: str = "",
) -> Chart:
    """A line chart of one series of non-negative amounts (e.g. cost per verified model-fooling example,
    in ``unit``) over categorical ``labels``, as ``rate_chart`` draws rates: the y axis runs from 0 to
    ``_nice_top`` of the largest value, so y of v = TOP + (1 - v / top) * (height - TOP - BOTTOM).
    A ``None`` value is a gap. Negative values are drawn at 0 (a round whose reversals exceed its pay).

    Raises:
        ValueError: when there is not one value per label.
    """
    labels = [str(label) for label in labels]
    if len(values) != len(labels):
        raise ValueError(f"{len(values)} values for {len(labels)} labels")
    present = [max(float(v), 0.0) for v in values if v is not None]
    top = _nice_top(max(present, default=0.0))
    scaled = [None if v is None else max(float(v), 0.0) / top for v in values]
    chart = rate_chart(
        labels, [Series(unit, scaled)], width=width, height=height, title=title, x_title=x_title
    )
    # Relabel the rate chart's percentages as amounts: gridlines and point titles.
    svg = str(chart.svg)
    for g in GRID:
        svg = svg.replace(f">{int(g * 100)}%</text>", f">{_amount(g * top)}</text>", 1)
    points = {unit: [Point(p.x, p.y, p.value * top, p.label, p.index) for p in chart.points.get(unit, [])]}
    for before, after in zip(chart.points.get(unit, []), points[unit], strict=True):
        svg = svg.replace(
            f"{escape(unit)} {escape(before.label)}: {before.value:.1%}</title>",
            f"{escape(unit)} {escape(after.label)}: {_amount(after.value)}</title>",
            1,
        )
    return Chart(width=width, height=height, labels=labels, points=points, svg=mark_safe(svg))


def _amount(value: float) -> str:
    return f"{value:,.2f}"


@dataclass(frozen=True)
class Column:
    """One drawn histogram column: its bin ``[low, high)``, count, and SVG rectangle."""

    low: float
    high: float
    count: int
    x: float
    y: float
    width: float
    height: float


@dataclass(frozen=True)
class Histogram:
    """A built histogram: its columns, the x of the threshold line (None without one) and ``svg``."""

    columns: list[Column]
    svg: SafeString
    threshold_x: float | None = None


def histogram_chart(
    counts: Sequence[int],
    *,
    threshold: float | None = None,
    threshold_label: str = "",
    width: int = 480,
    height: int = 220,
    title: str = "",
    x_title: str = "",
) -> Histogram:
    """Columns of ``counts`` over equal bins of [0, 1] (bin i: ``[i / k, (i + 1) / k)``), a dashed
    vertical line at ``threshold`` labelled ``threshold_label``. Geometry, so tests can check it:

        x of value v        = LEFT + v * (width - LEFT - RIGHT)
        height of count c   = c / top * (height - TOP - BOTTOM), top = ``_nice_top`` of the largest

    Raises:
        ValueError: no bin, a negative count, or a threshold outside [0, 1].
    """
    if not counts:
        raise ValueError("a histogram needs at least one bin")
    if any(c < 0 for c in counts):
        raise ValueError("counts must be >= 0")
    if threshold is not None and not 0 <= threshold <= 1:
        raise ValueError(f"threshold {threshold!r} is not in [0, 1]")
    k = len(counts)
    plot_w, plot_h = width - LEFT - RIGHT, height - TOP - BOTTOM
    top = _nice_top(float(max(counts)) or 1.0)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart histogram" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
    ]
    for g in GRID:
        y = _fmt(TOP + (1 - g) * plot_h)
        parts.append(
            f'<line class="grid" x1="{LEFT}" y1="{y}" x2="{width - RIGHT}" y2="{y}" stroke="#ddd"/>'
            f'<text x="{LEFT - 6}" y="{y}" text-anchor="end" dominant-baseline="middle" font-size="11">'
            f"{_fmt(g * top)}</text>"
        )
    columns = []
    for i, count in enumerate(counts):
        low, high = i / k, (i + 1) / k
        h = count / top * plot_h
        column = Column(low, high, int(count), LEFT + low * plot_w, TOP + plot_h - h, plot_w / k, h)
        columns.append(column)
        parts.append(
            f'<rect class="column" x="{_fmt(column.x + 1)}" y="{_fmt(column.y)}" width="{_fmt(column.width - 2)}" '
            f'height="{_fmt(h)}" fill="{PALETTE[0]}"><title>{low:.1f} to {high:.1f}: {count}</title></rect>'
        )
    for g in (0.0, 0.5, 1.0):
        x = _fmt(LEFT + g * plot_w)
        parts.append(
            f'<text x="{x}" y="{TOP + plot_h + 14}" text-anchor="middle" font-size="11">{g:g}</text>'
        )
    if x_title:
        parts.append(
            f'<text x="{_fmt(LEFT + plot_w / 2)}" y="{height - 8}" text-anchor="middle" font-size="12">'
            f"{escape(x_title)}</text>"
        )
    threshold_x = None
    if threshold is not None:
        threshold_x = LEFT + threshold * plot_w
        x = _fmt(threshold_x)
        parts.append(
            f'<line class="threshold" x1="{x}" y1="{TOP - 6}" x2="{x}" y2="{TOP + plot_h}" stroke="{PALETTE[1]}" '
            f'stroke-width="1.5" stroke-dasharray="5 3"><title>{escape(threshold_label)}</title></line>'
            f'<text x="{x}" y="{TOP - 10}" text-anchor="middle" font-size="11" fill="{PALETTE[1]}">'
            f"{escape(threshold_label)}</text>"
        )
    parts.append("</svg>")
    return Histogram(columns=columns, svg=mark_safe("".join(parts)), threshold_x=threshold_x)


@dataclass(frozen=True)
class IntervalRow:
    """One drawn row of an ``interval_chart``: its label, value, 95% interval (None: not drawn) and the x
    of the value (None for no value)."""

    label: str
    value: float | None
    interval: tuple[float, float] | None
    x: float | None


@dataclass(frozen=True)
class IntervalChart:
    rows: list[IntervalRow]
    svg: SafeString


#: ``interval_chart``'s geometry: the labels' column, the right margin, the top and bottom margins, a
#: row's height.
LABEL_COLUMN, ROW_HEIGHT = 200, 22


def interval_chart(
    items: Sequence[tuple[str, float | None, tuple[float, float] | None]],
    *,
    low: float,
    high: float,
    ticks: Sequence[float],
    width: int = 560,
    title: str = "",
    unit: str = "",
) -> IntervalChart:
    """A dot per ``(label, value, interval)`` on a horizontal scale from ``low`` to ``high``, with its
    95% interval as a whisker (a forest plot), one row each in the order given. Geometry, so tests can
    check it:

        x of value v    = LABEL_COLUMN + (v - low) / (high - low) * (width - LABEL_COLUMN - RIGHT)
        y of row i      = TOP + i * ROW_HEIGHT + ROW_HEIGHT / 2

    An interval reaching past the scale is drawn to its edge (its ``<title>`` says the whole interval).

    Raises:
        ValueError: ``high <= low``, a value outside [low, high], or an interval whose low is above its high.
    """
    if high <= low:
        raise ValueError(f"the scale's high {high!r} must be above its low {low!r}")
    plot = width - LABEL_COLUMN - RIGHT
    height = TOP + ROW_HEIGHT * len(items) + BOTTOM - 16

    def x_at(v: float) -> float:
        return LABEL_COLUMN + (min(max(v, low), high) - low) / (high - low) * plot

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart interval-chart" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
    ]
    bottom = TOP + ROW_HEIGHT * len(items)
    for t in ticks:
        x = _fmt(x_at(t))
        parts.append(
            f'<line class="grid" x1="{x}" y1="{TOP - 4}" x2="{x}" y2="{bottom}" stroke="#ddd"/>'
            f'<text x="{x}" y="{bottom + 14}" text-anchor="middle" font-size="11">{_fmt(t)}{escape(unit)}</text>'
        )
    rows = []
    for i, (label, value, interval) in enumerate(items):
        if value is not None and not low <= value <= high:
            raise ValueError(f"{label!r}: {value!r} is outside [{low}, {high}]")
        if interval is not None and interval[0] > interval[1]:
            raise ValueError(f"{label!r}: the interval {interval!r} runs backwards")
        y = TOP + i * ROW_HEIGHT + ROW_HEIGHT / 2
        short = label if len(label) <= 30 else label[:29] + "…"
        parts.append(
            f'<text x="{LABEL_COLUMN - 8}" y="{_fmt(y)}" text-anchor="end" dominant-baseline="middle" '
            f'font-size="11">{escape(short)}</text>'
        )
        x = None if value is None else x_at(value)
        if interval is not None:
            left, right = _fmt(x_at(interval[0])), _fmt(x_at(interval[1]))
            parts.append(
                f'<g class="interval" stroke="{PALETTE[0]}" stroke-width="1.5">'
                f"<title>{escape(label)}: 95% interval {_fmt(interval[0])} to {_fmt(interval[1])}</title>"
                f'<line x1="{left}" y1="{_fmt(y)}" x2="{right}" y2="{_fmt(y)}"/>'
                f'<line x1="{left}" y1="{_fmt(y - 4)}" x2="{left}" y2="{_fmt(y + 4)}"/>'
                f'<line x1="{right}" y1="{_fmt(y - 4)}" x2="{right}" y2="{_fmt(y + 4)}"/></g>'
            )
        if x is not None:
            parts.append(
                f'<circle class="point" cx="{_fmt(x)}" cy="{_fmt(y)}" r="4" fill="{PALETTE[0]}">'
                f"<title>{escape(label)}: {_fmt(value)}</title></circle>"
            )
        rows.append(IntervalRow(label, value, interval, x))
    parts.append("</svg>")
    return IntervalChart(rows, mark_safe("".join(parts)))
