"""The server-side SVG chart: points at known coordinates, gaps for missing values, escaping."""

from __future__ import annotations

import re

import pytest

from tasks import charts
from tasks.charts import Series, rate_chart


def test_points_have_the_expected_coordinates():
    # width 400: plot area x from 48 to 384 (336 px), 4 categories -> 84 px each, centres at 90, 174, 258, 342.
    # height 228: plot area y from 28 to 184 (156 px); rate v -> y = 28 + (1 - v) * 156.
    assert (charts.LEFT, charts.RIGHT, charts.TOP, charts.BOTTOM) == (48, 16, 28, 44)
    chart = rate_chart(
        ["1", "2", "3", "4"],
        [Series("MER", [0.5, None, 0.25, 1.0]), Series("vMER", [0.0, None, None, 0.75])],
        width=400,
        height=228,
    )
    mer = [(p.x, p.y, p.label) for p in chart.points["MER"]]
    assert mer == [(90, 106, "1"), (258, 145, "3"), (342, 28, "4")]
    vmer = [(p.x, p.y) for p in chart.points["vMER"]]
    assert vmer == [(90, 184), (342, 67)]

    svg = str(chart.svg)
    circles = re.findall(r'<circle class="point" data-series="(\w+)" cx="([\d.]+)" cy="([\d.]+)"', svg)
    assert circles == [
        ("MER", "90", "106"),
        ("MER", "258", "145"),
        ("MER", "342", "28"),
        ("vMER", "90", "184"),
        ("vMER", "342", "67"),
    ]
    # Lines join neighbouring rounds only: MER 3-4 (1 -> 3 skips the gap), vMER nothing.
    assert re.findall(r'<polyline points="([^"]+)"', svg) == ["258,145 342,28"]


def test_a_consecutive_run_is_one_polyline():
    chart = rate_chart(["a", "b", "c"], [Series("x", [0.1, 0.2, 0.3])], width=400, height=228)
    [line] = re.findall(r'<polyline points="([^"]+)"', str(chart.svg))
    assert line == "104,168.4 216,152.8 328,137.2"


def test_no_values_is_an_empty_chart():
    chart = rate_chart(["1", "2"], [Series("MER", [None, None])])
    assert chart.is_empty and "<circle" not in str(chart.svg)


def test_labels_are_escaped_and_values_checked():
    chart = rate_chart(["<b>"], [Series("M&E", [0.5])], title='"quoted"')
    svg = str(chart.svg)
    assert "<b>" not in svg and "&lt;b&gt;" in svg and "M&amp;E" in svg and "&quot;quoted&quot;" in svg
    with pytest.raises(ValueError, match="rate"):
        rate_chart(["1"], [Series("MER", [1.5])])
    with pytest.raises(ValueError, match="values"):
        rate_chart(["1", "2"], [Series("MER", [0.5])])


def test_an_interval_is_a_whisker_through_its_point():
    # width 400, height 228: y = TOP + (1 - v) * plot height, so (see the polyline above) 0.1 -> 168.4
    # and 0.3 -> 137.2; of two labels over the 336-pixel plot from x 48, the first's centre is
    # 48 + 84 = 132: a line from y(0.3) to y(0.1) there, and 8-pixel caps.
    chart = rate_chart(["a", "b"], [Series("ASR", [0.2, 0.5], [(0.1, 0.3), None])], width=400, height=228)
    svg = str(chart.svg)
    [whisker] = re.findall(r'<g class="interval"[^>]*>(.*?)</g>', svg)
    assert "<title>ASR a: 95% interval 10.0% to 30.0%</title>" in whisker
    assert re.findall(r'<line x1="([^"]+)" y1="([^"]+)" x2="([^"]+)" y2="([^"]+)"/>', whisker) == [
        ("132", "137.2", "132", "168.4"),
        ("128", "137.2", "136", "137.2"),
        ("128", "168.4", "136", "168.4"),
    ]
    with pytest.raises(ValueError, match="intervals for 2 labels"):
        rate_chart(["a", "b"], [Series("ASR", [0.2, 0.5], [(0.1, 0.3)])])
    with pytest.raises(ValueError, match="not an interval"):
        rate_chart(["a"], [Series("ASR", [0.2], [(0.3, 0.1)])])
