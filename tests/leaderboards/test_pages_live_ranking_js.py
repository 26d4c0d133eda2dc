"""The leaderboard's slider script (leaderboards/static/leaderboards/live_ranking.js), run under Node
on the page's own data block: its Dynascore, ranks, completeness, AMRS and order agree with the
server's (``compute_dynascore`` through ``build_leaderboard``) on hand-made tables, weight by weight."""

from __future__ import annotations

import html as html_lib
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from django.urls import reverse

from leaderboards.dynascore import (
    RESOLUTION_SLACK,
    RESOLUTIONS,
    SORT_DECIMALS,
    TIE_TOLERANCE,
    compute_dynascore,
)
from leaderboards.tables import format_metric, spread_text

SCRIPT = Path(__file__).resolve().parents[2] / "leaderboards" / "static" / "leaderboards" / "live_ranking.js"

RUNNER = """
const live = require(process.argv[1]);
const data = JSON.parse(process.argv[2]);
const cases = JSON.parse(process.argv[3]);
const out = cases.map(([mw, dw, sort, dir]) => {
  const r = live.leaderboardRows(data, mw, dw);
  const sorted = live.sortRows(r.rows.map((row) => Object.assign({name: String(row.model_id)}, row)), sort, dir);
  return {rows: r.rows, order: sorted.map((row) => row.model_id), amrs: r.amrs, leftOut: r.leftOut,
          pairsUsed: r.pairsUsed, normalised: r.normalised,
          cells: r.rows.map((row) => data.metrics.map((j) => live.formatMetric(j, row.metrics[j])))};
});
console.log(JSON.stringify(out));
"""


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.fail(
            "node is not on PATH: install Node.js (apt-get install nodejs) to run this test", pytrace=False
        )
    return node


def _run(data: dict, cases: list) -> list[dict]:
    result = subprocess.run(
        [_node(), "-e", RUNNER, str(SCRIPT), json.dumps(data), json.dumps(cases)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _data_block(response) -> dict:
    match = re.search(
        r'<script id="leaderboard-data" type="application/json">(.*?)</script>',
        response.content.decode(),
        re.S,
    )
    assert match, "no data block"
    return json.loads(html_lib.unescape(match.group(1)))


@pytest.fixture
def hand_table(hate_task, hate_round, make_dataset, make_model, score):
    """Five models on two scoring datasets (R1, HC), by hand:

    P: R1 0.9 (thr 100, mem 1.0), HC 0.5 (thr 120, mem 1.0)
    Q: R1 0.6 (thr 400, mem 2.0), HC 0.7 (thr 380, mem 2.0)
    R: R1 0.3 (thr 250, mem 1.5), HC 0.9 (thr 260, mem 1.5)
    S: R1 0.8 only (incomplete: no HC score)
    E: a remote endpoint, memory not measurable, R1 0.7 and HC 0.6 (thr 50)
    Fairness and robustness 0.9 everywhere (left out: AMRS 0), except Q's fairness 0.8 on R1.
    """
    r1 = make_dataset("r1", round_=hate_round)
    hc = make_dataset("hc")
    p, q, r, s = make_model("P"), make_model("Q"), make_model("R"), make_model("S")
    e = make_model("E", source="endpoint")
    score(p, r1, 0.9, throughput=100, memory=1.0)
    score(p, hc, 0.5, throughput=120, memory=1.0)
    score(q, r1, 0.6, throughput=400, memory=2.0, fairness=0.8)
    score(q, hc, 0.7, throughput=380, memory=2.0)
    score(r, r1, 0.3, throughput=250, memory=1.5)
    score(r, hc, 0.9, throughput=260, memory=1.5)
    score(s, r1, 0.8, throughput=300, memory=1.2)
    score(e, r1, 0.7, throughput=50, memory=None)
    score(e, hc, 0.6, throughput=50, memory=None)
    return {
        "url": reverse("leaderboards:leaderboard", args=[hate_task.slug]),
        "r1": r1,
        "hc": hc,
        "models": {"P": p, "Q": q, "R": r, "S": s, "E": e},
    }


METRICS = ("perf", "throughput", "memory", "fairness", "robustness")


def _query(mw: dict, dw: dict, sort: str, direction: str) -> dict:
    query = {f"w_{j}": repr(float(mw[j])) for j in METRICS}
    query.update({f"d_{k}": repr(float(v)) for k, v in dw.items()})
    return {**query, "sort": sort, "dir": direction}


def test_js_agrees_with_the_server_weight_by_weight(client, hand_table):
    r1, hc = str(hand_table["r1"].pk), str(hand_table["hc"].pk)
    cases = [
        (
            {"perf": 4, "throughput": 1, "memory": 1, "fairness": 1, "robustness": 1},
            {r1: 1, hc: 1},
            "dynascore",
            "desc",
        ),
        (
            {"perf": 1, "throughput": 0, "memory": 0, "fairness": 0, "robustness": 0},
            {r1: 1, hc: 1},
            "dynascore",
            "desc",
        ),
        (
            {"perf": 1, "throughput": 3.5, "memory": 0, "fairness": 0, "robustness": 0},
            {r1: 2, hc: 0.5},
            "dynascore",
            "asc",
        ),
        (
            {"perf": 0.1, "throughput": 0, "memory": 2, "fairness": 1, "robustness": 0},
            {r1: 0, hc: 1},
            "throughput",
            "desc",
        ),
        (
            {"perf": 0, "throughput": 0, "memory": 0, "fairness": 0, "robustness": 0},
            {r1: 0, hc: 0},
            "perf",
            "asc",
        ),
        (
            {"perf": 7.3, "throughput": 0.2, "memory": 9.9, "fairness": 0, "robustness": 4},
            {r1: 0.3, hc: 6.1},
            "memory",
            "asc",
        ),
        # perf weighs 0 and measures no weighted metric (robustness is 0.9 for all: AMRS 0): robustness
        # becomes the yardstick (dynascore.py, "Reference metric"), every model 0.9, all rank 1.
        (
            {"perf": 0, "throughput": 0, "memory": 0, "fairness": 0, "robustness": 2},
            {r1: 1, hc: 1},
            "dynascore",
            "desc",
        ),
        # perf weighs 0 but measures memory: it stays the yardstick; robustness left out (AMRS 0).
        (
            {"perf": 0, "throughput": 0, "memory": 1, "fairness": 0, "robustness": 1},
            {r1: 1, hc: 1},
            "dynascore",
            "desc",
        ),
    ]
    data = _data_block(client.get(hand_table["url"]))
    js = _run(data, [[mw, dw, sort, direction] for mw, dw, sort, direction in cases])
    for (mw, dw, sort, direction), got in zip(cases, js, strict=True):
        table = client.get(hand_table["url"], _query(mw, dw, sort, direction)).context["table"]
        server = {row["model_id"]: row for row in table["rows"]}
        assert got["order"] == [row["model_id"] for row in table["rows"]], (mw, dw, sort)
        assert len(got["rows"]) == len(server)
        for row in got["rows"]:
            expected = server[row["model_id"]]
            # The same operations in the same order: equal floats, not merely close ones.
            assert row["dynascore"] == expected["dynascore"], (mw, dw, row["model_id"])
            assert row["rank"] == expected["rank"]
            assert row["complete"] == expected["complete"]
            assert row["missing"] == expected["missing"]
            assert row["metrics"] == expected["metrics"]
            assert row["notes"] == expected["notes"]
        assert got["amrs"] == table["amrs"]
        assert got["leftOut"] == table["left_out"]
        assert got["pairsUsed"] == table["pairs_used"]
        assert got["normalised"] == pytest.approx(table["normalised_metric_weights"], abs=0)
        # Cells as the server formats them.
        for row, cells in zip(got["rows"], got["cells"], strict=True):
            assert cells == [format_metric(j, server[row["model_id"]]["metrics"][j]) for j in METRICS]


def test_js_dynascore_by_hand(client, board):
    # The board of test_leaderboard_page (P 0.9/100, Q 0.6/400, R 0.3/250 on one dataset): AMRS of
    # throughput = mean(150 / 0.3, 300 / 0.3) = 750; memory, fairness and robustness left out (AMRS 0);
    # Dynascore = 4/8 perf + 1/8 throughput / 750.
    data = _data_block(client.get(board["url"]))
    d = str(board["d"].pk)
    [default, throughput_only] = _run(
        data,
        [
            [
                {"perf": 4, "throughput": 1, "memory": 1, "fairness": 1, "robustness": 1},
                {d: 1},
                "dynascore",
                "desc",
            ],
            [
                {"perf": 0, "throughput": 1, "memory": 0, "fairness": 0, "robustness": 0},
                {d: 1},
                "dynascore",
                "desc",
            ],
        ],
    )
    scores = {row["model_id"]: row["dynascore"] for row in default["rows"]}
    assert scores[board["P"].pk] == pytest.approx(0.45 + 0.125 * 100 / 750)
    assert scores[board["Q"].pk] == pytest.approx(0.3 + 0.125 * 400 / 750)
    assert scores[board["R"].pk] == pytest.approx(0.15 + 0.125 * 250 / 750)
    assert default["amrs"]["throughput"] == pytest.approx(750)
    assert set(default["leftOut"]) == {"memory", "fairness", "robustness"}
    assert default["order"] == [board["P"].pk, board["Q"].pk, board["R"].pk]
    # Throughput only: Q 400/750, R 250/750, P 100/750.
    assert throughput_only["order"] == [board["Q"].pk, board["R"].pk, board["P"].pk]
    assert {row["model_id"]: row["rank"] for row in throughput_only["rows"]} == {
        board["Q"].pk: 1,
        board["R"].pk: 2,
        board["P"].pk: 3,
    }


@pytest.fixture
def board(hate_task, hate_round, make_dataset, make_model, score):
    d = make_dataset("r1", round_=hate_round)
    p, q, r = make_model("P"), make_model("Q"), make_model("R")
    score(p, d, 0.9, throughput=100)
    score(q, d, 0.6, throughput=400)
    score(r, d, 0.3, throughput=250)
    return {"d": d, "P": p, "Q": q, "R": r, "url": reverse("leaderboards:leaderboard", args=[hate_task.slug])}


FORMAT_CASES = [
    ("perf", 0.5625),  # 56.25 exactly: Python rounds half to even -> 56.2%
    ("perf", 0.4375),  # 43.75 -> 43.8%
    ("perf", 0.123456),
    ("fairness", 1.0),
    ("throughput", 1234.25),  # 1,234.2 (half to even)
    ("throughput", 98765432.15),
    ("memory", 0.125),  # 0.12
    ("memory", 2.675),  # binary 2.67499...: 2.67
    ("other", 123456.0),
    ("other", 0.000012345),
    ("other", 3.14159),
]


def test_numbers_are_formatted_as_the_server_formats_them():
    runner = (
        "const live = require(process.argv[1]);"
        "console.log(JSON.stringify(JSON.parse(process.argv[2]).map(([m, v]) => live.formatMetric(m, v))));"
    )
    result = subprocess.run(
        [_node(), "-e", runner, str(SCRIPT), json.dumps(FORMAT_CASES)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [format_metric(m, v) for m, v in FORMAT_CASES]
    assert format_metric("perf", 0.5625) == "56.2%"  # the tie that toFixed alone would round up


def test_the_page_carries_sliders_the_script_and_its_data(client, board):
    page = client.get(board["url"]).content.decode()
    assert re.search(
        r'<input type="range" id="w_perf" name="w_perf" min="0" step="any" value="4" max="10">', page
    )
    assert '<output for="w_perf">4</output>' in page
    assert f'<label for="d_{board["d"].pk}">R1' in page
    assert 'src="/static/leaderboards/live_ranking.js" defer' in page
    assert "<script>" not in page  # no inline script (Content-Security-Policy)
    data = _data_block(client.get(board["url"]))
    assert data["datasets"] == [str(board["d"].pk)]
    assert [m["id"] for m in data["models"]] == sorted([board["P"].pk, board["Q"].pk, board["R"].pk])
    assert data["models"][0]["scores"][str(board["d"].pk)]["throughput"] == 100
    # A weight above the slider's usual range widens it instead of being cut to 10.
    page = client.get(board["url"], {"w_perf": "25"}).content.decode()
    assert 'name="w_perf" min="0" step="any" value="25" max="25"' in page


# --- the noise guard with measured spreads (dynascore.py, "Measured spread") -----------------------

DIRECT_RUNNER = """
const live = require(process.argv[1]);
const cases = JSON.parse(process.argv[2]);
console.log(JSON.stringify(cases.map(([models, dw, mw, opts]) => {
  const r = live.computeDynascore(models, dw, mw, opts);
  return {amrs: r.amrs, leftOut: r.leftOut, pairsUsed: r.pairsUsed, reference: r.reference,
          models: r.models.map((m) => ({key: m.key, dynascore: m.dynascore, rank: m.rank, spread: m.spread}))};
})));
"""


def _guard_case(thr_a, thr_b, spread_a, spread_b, b_d2=None):
    """Two models on one dataset (or two, weights 1 and 3, when ``b_d2`` is given); a spread of None
    is an old Score without one."""
    datasets = ["D1", "D2"] if b_d2 is not None else ["D1"]
    scores = {
        "A": {d: {"perf": 0.5, "throughput": thr_a * (2 if d == "D2" else 1)} for d in datasets},
        "B": {"D1": {"perf": 0.6, "throughput": thr_b}},
    }
    if b_d2 is not None:
        scores["B"]["D2"] = {"perf": 0.6, "throughput": b_d2}
    spreads = {
        key: ({"D1": {"throughput": value}} if value is not None else {})
        for key, value in (("A", spread_a), ("B", spread_b))
    }
    weights = {"D1": 1, "D2": 3} if b_d2 is not None else {"D1": 1}
    return scores, spreads, weights


GUARD_CASES = [
    _guard_case(100, 110, 0.1, 0.02),  # |Δ| 10 = u_A 10: counts (the boundary)
    _guard_case(100, 110, 0.11, 0.02),  # u_A 11 > 10: noise
    _guard_case(100, 110, 0.0, 0.1),  # u_B 11 > 10: noise
    _guard_case(100, 105.3, None, None),  # old Scores: the fixed 5% (5.265 <= 5.3): counts
    _guard_case(100, 105, None, None),  # old Scores: 5 < 5.25: noise
    _guard_case(100, 105.3, 0.01, 0.01),  # spreads below the floor: the fixed guard
    _guard_case(100, 120, 0.2, None, b_d2=210),  # aggregated u_A 12.5 = |Δ| 12.5: counts
    _guard_case(100, 120, 0.2, None, b_d2=209),  # |Δ| 11.75 < 12.5: noise
]


def test_js_noise_guard_with_spreads_equals_python_at_its_boundaries():
    opts = {
        "memoryCeiling": 16.0,
        "metrics": ["perf", "throughput"],
        "resolutions": {
            j: {"absolute": r.absolute, "relative": r.relative, "measured": r.measured}
            for j, r in RESOLUTIONS.items()
        },
        "tieTolerance": TIE_TOLERANCE,
        "sortDecimals": SORT_DECIMALS,
        "resolutionSlack": RESOLUTION_SLACK,
    }
    mw = {"perf": 1, "throughput": 1}
    cases = [
        [
            [{"key": k, "scores": scores[k], "spreads": spreads[k]} for k in scores],
            list(weights.items()),
            mw,
            opts,
        ]
        for scores, spreads, weights in GUARD_CASES
    ]
    js = subprocess.run(
        [_node(), "-e", DIRECT_RUNNER, str(SCRIPT), json.dumps(cases)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert js.returncode == 0, js.stderr
    got = json.loads(js.stdout)
    left_out = []
    for (scores, spreads, weights), result in zip(GUARD_CASES, got, strict=True):
        py = compute_dynascore(scores, dataset_weights=weights, metric_weights=mw, spreads=spreads)
        assert result["amrs"] == py.amrs
        assert result["leftOut"] == py.left_out
        assert result["pairsUsed"] == py.pairs_used
        assert [(m["key"], m["dynascore"], m["rank"], m["spread"]) for m in result["models"]] == [
            (m.key, m.dynascore, m.rank, m.spread) for m in py.models
        ]
        left_out.append("throughput" in result["leftOut"])
    # By hand (the comments of GUARD_CASES): which cases the guard calls noise.
    assert left_out == [False, True, True, False, True, False, False, True]
    assert got[0]["amrs"]["throughput"] == pytest.approx(100)  # 10 / 0.1
    assert got[6]["models"][1]["spread"]["throughput"] == pytest.approx(12.5)  # A (ranked below B)
    assert got[1]["leftOut"]["throughput"].endswith(
        "measurement resolution (the larger of 5% of the value and the measured spread)"
    )


@pytest.fixture
def spread_board(hate_task, hate_round, make_dataset, make_model, score):
    """Three models on one dataset: P 0.5 / 100 (spread 10%), Q 0.6 / 109 (spread 2%), R 0.7 / 120 (an
    old Score: no spread). Neighbours (P, Q): |Δ| 9 < max(5% of 109, u_P 10) -> noise; (Q, R): |Δ| 11 >=
    max(5% of 120 = 6, u_Q 2.18, u_R 6) -> 11 / 0.1 = 110. AMRS = (0 + 110) / 2 = 55. Without the spreads
    (P, Q) would count: 9 >= 5.45."""
    d = make_dataset("r1", round_=hate_round)
    p, q, r = make_model("P"), make_model("Q"), make_model("R")
    for model, perf, thr, spread in ((p, 0.5, 100.0, 0.1), (q, 0.6, 109.0, 0.02), (r, 0.7, 120.0, None)):
        metrics = {"throughput": thr, "memory": 1.0, "fairness": 0.9, "robustness": 0.9}
        if spread is not None:
            metrics.update(throughput_spread=spread, throughput_passes=[thr] * 5)
        score(model, d, perf, metrics=metrics)
    return {"d": d, "P": p, "Q": q, "R": r, "url": reverse("leaderboards:leaderboard", args=[hate_task.slug])}


def test_the_payload_carries_the_spreads_and_js_agrees_with_the_server(client, spread_board):
    data = _data_block(client.get(spread_board["url"]))
    d = str(spread_board["d"].pk)
    by_id = {m["id"]: m for m in data["models"]}
    assert by_id[spread_board["P"].pk]["spreads"] == {d: {"throughput": 0.1}}
    assert by_id[spread_board["Q"].pk]["spreads"] == {d: {"throughput": 0.02}}
    assert by_id[spread_board["R"].pk]["spreads"] == {}  # an old Score: the fixed 5% stands in
    assert data["resolutions"]["throughput"] == {"absolute": 0.0, "relative": 0.05, "measured": True}
    assert data["resolutions"]["memory"]["measured"] is False
    mw = {"perf": 1, "throughput": 1, "memory": 0, "fairness": 0, "robustness": 0}
    [got] = _run(data, [[mw, {d: 1}, "dynascore", "desc"]])
    table = client.get(spread_board["url"], _query(mw, {d: 1}, "dynascore", "desc")).context["table"]
    assert got["amrs"] == table["amrs"]
    assert table["amrs"]["throughput"] == pytest.approx(55)
    assert got["order"] == [row["model_id"] for row in table["rows"]]
    server = {row["model_id"]: row["dynascore"] for row in table["rows"]}
    assert {row["model_id"]: row["dynascore"] for row in got["rows"]} == server
    # By hand: 0.5 perf + 0.5 throughput / 55; R = 0.35 + 0.5 * 120 / 55.
    assert server[spread_board["R"].pk] == pytest.approx(0.35 + 60 / 55)


def test_the_table_shows_measured_spreads_under_throughput_and_js_shows_the_same(client, spread_board):
    """P's passes spread 10% of its 100 examples/s, Q's 2% of 109; R's old Score measured none, so its
    cell shows no range (the guard's stand-in 5% is not a measurement)."""
    response = client.get(spread_board["url"])
    page = response.content.decode()

    def cell(model):
        row = re.search(rf'<tr[^>]*data-model="{model.pk}"[^>]*>(.*?)</tr>', page, re.S).group(1)
        return re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)[3 + METRICS.index("throughput")]

    assert cell(spread_board["P"]) == '100.0<span class="spread muted">range 10%</span>'
    assert cell(spread_board["Q"]) == '109.0<span class="spread muted">range 2%</span>'
    assert cell(spread_board["R"]) == "120.0"
    data = _data_block(response)
    mw = {"perf": 1, "throughput": 1, "memory": 0, "fairness": 0, "robustness": 0}
    [got] = _run(data, [[mw, {str(spread_board["d"].pk): 1}, "dynascore", "desc"]])
    runner = (
        "const live = require(process.argv[1]);"
        "console.log(JSON.stringify(JSON.parse(process.argv[2]).map(([u, v]) => live.spreadText(u, v))));"
    )
    shown = {row["model_id"]: row["spread"] for row in got["rows"]}
    assert shown[spread_board["P"].pk] == {"throughput": pytest.approx(10.0)}
    assert shown[spread_board["R"].pk] == {}
    cases = [[10.0, 100.0], [2.18, 109.0], [0.5, 10.0], [None, 5.0], [1.0, 0.0]]
    result = subprocess.run(
        [_node(), "-e", runner, str(SCRIPT), json.dumps(cases)], capture_output=True, text=True, timeout=60
    )
    assert json.loads(result.stdout) == [spread_text(u, v) for u, v in cases]
    assert spread_text(0.5, 10.0) == "range 5%" and spread_text(None, 5.0) == ""


def test_js_chooses_the_same_stand_in_yardstick_as_python():
    """No perf; asr (weight 2) only A has, bt (weight 2) A and B have: both sides take bt as the
    yardstick (dynascore.py, "Reference metric"), leave asr out and rank A (1029) over B (971)."""
    metrics = ["perf", "asr", "bt"]
    mw = {"perf": 0, "asr": 2, "bt": 2}
    scores = {"A": {"d": {"asr": 0.0, "bt": 1029.0}}, "B": {"d": {"bt": 971.0}}}
    opts = {
        "memoryCeiling": 16.0,
        "metrics": metrics,
        "resolutions": {},
        "tieTolerance": TIE_TOLERANCE,
        "sortDecimals": SORT_DECIMALS,
        "resolutionSlack": RESOLUTION_SLACK,
    }
    case = [[{"key": k, "scores": scores[k], "spreads": {}} for k in scores], [["d", 1]], mw, opts]
    js = subprocess.run(
        [_node(), "-e", DIRECT_RUNNER, str(SCRIPT), json.dumps([case])],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert js.returncode == 0, js.stderr
    [got] = json.loads(js.stdout)
    py = compute_dynascore(
        scores, dataset_weights={"d": 1}, metric_weights=mw, metrics=metrics, resolutions={}
    )
    assert py.reference == "bt" and got["reference"] == "bt"
    assert got["leftOut"] == py.left_out
    assert [(m["key"], m["dynascore"], m["rank"]) for m in got["models"]] == [
        ("A", 514.5, 1),
        ("B", 485.5, 2),
    ]
