"""A remote endpoint's memory cannot be measured: its row says so instead of a bare "incomplete", and the
Dynascore stays honest (none while memory counts, no invented value). Hand values in the comments."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from models_registry.models import RegisteredModel

NOTE_COUNTS = (
    "Memory not measurable for remote endpoints: no Dynascore while memory counts; "
    "set the memory weight to 0 to rank it."
)
NOTE_ZERO = "Memory not measurable for remote endpoints; memory does not count in this view's Dynascore."


@pytest.fixture
def board(hate_task, hate_round, make_dataset, make_model, score):
    """P and Q run here; E is a remote endpoint (memory None, as the evaluation stores it).

    Fairness and robustness are equal for all: AMRS 0, left out.
    throughput: all three; sorted by perf Q 0.6, E 0.75, P 0.9:
        AMRS = mean(|200 - 400| / 0.15, |100 - 200| / 0.15) = mean(1333.33, 666.67) = 1000.
    memory: P and Q only (E has none); sorted Q, P: AMRS = |(16 - 1) - (16 - 2)| / 0.3 = 3.3333.
    """
    d = make_dataset("r1", round_=hate_round)
    p, q = make_model("P"), make_model("Q")
    e = make_model(
        "E",
        source=RegisteredModel.Source.ENDPOINT,
        endpoint_url="http://127.0.0.1:9/predict",
        endpoint_secret="s" * 32,
    )
    score(p, d, 0.9, throughput=100, memory=1.0)
    score(q, d, 0.6, throughput=400, memory=2.0)
    score(e, d, 0.75, throughput=200, memory=None)
    return {"P": p, "Q": q, "E": e, "url": reverse("leaderboards:leaderboard", args=[hate_task.slug])}


def _rows(response):
    return {r["name"]: r for r in response.context["table"]["rows"]}


def test_default_weights_endpoint_has_no_dynascore_and_the_row_says_why(client, board):
    # ω̃ = 0.5 perf, 0.125 each other metric.
    # P = 0.5 * 0.9 + 0.125 * 100 / 1000 + 0.125 * 15 / 3.3333 = 0.45 + 0.0125 + 0.5625 = 1.025
    # Q = 0.5 * 0.6 + 0.125 * 400 / 1000 + 0.125 * 14 / 3.3333 = 0.30 + 0.05   + 0.525  = 0.875
    # E: memory counts and E has none -> no Dynascore (ranked last, shown).
    response = client.get(board["url"])
    table = response.context["table"]
    assert table["amrs"]["throughput"] == pytest.approx(1000)
    assert table["amrs"]["memory"] == pytest.approx(1 / 0.3)
    rows = _rows(response)
    assert rows["P"]["dynascore"] == pytest.approx(1.025)
    assert rows["Q"]["dynascore"] == pytest.approx(0.875)
    e = rows["E"]
    assert e["dynascore"] is None and e["rank"] is None
    # Every score is there: not "incomplete", but memory is not measurable, and the row says so.
    assert e["complete"] is True and e["missing"] == []
    assert e["not_measurable"] == {"memory": "memory not measurable for remote endpoints"}
    assert e["notes"] == [NOTE_COUNTS]
    assert rows["P"]["notes"] == [] and rows["P"]["not_measurable"] == {}
    html = response.content.decode()
    e_row = re.search(rf'<tr[^>]*data-model="{board["E"].pk}".*?</tr>', html, re.S).group(0)
    assert "incomplete</span>" not in e_row
    assert NOTE_COUNTS in e_row
    assert re.search(r'title="memory not measurable for remote endpoints">not measurable</td>', e_row)


def test_memory_weight_zero_ranks_the_endpoint(client, board):
    # ω = 4, 1, 0, 1, 1 -> ω̃ perf 4/7, throughput 1/7 (fairness, robustness left out, memory weight 0).
    # P = (4 * 0.9 + 100 / 1000) / 7 = 3.7 / 7 = 0.528571
    # E = (4 * 0.75 + 200 / 1000) / 7 = 3.2 / 7 = 0.457143
    # Q = (4 * 0.6 + 400 / 1000) / 7 = 2.8 / 7 = 0.4
    response = client.get(board["url"], {"w_memory": 0})
    rows = _rows(response)
    assert rows["P"]["dynascore"] == pytest.approx(3.7 / 7)
    assert rows["E"]["dynascore"] == pytest.approx(3.2 / 7)
    assert rows["Q"]["dynascore"] == pytest.approx(2.8 / 7)
    assert [r["name"] for r in response.context["table"]["rows"]] == ["P", "E", "Q"]
    assert rows["E"]["notes"] == [NOTE_ZERO]


def test_a_local_model_missing_memory_is_still_incomplete(client, board, make_model, score, hate_round):
    from leaderboards.models import Dataset

    local = make_model("L")
    score(local, Dataset.objects.get(slug="r1"), 0.8, throughput=150, memory=None)
    rows = _rows(client.get(board["url"]))
    assert rows["L"]["complete"] is False and rows["L"]["missing"] == ["R1"]
    assert rows["L"]["notes"] == [] and rows["L"]["dynascore"] is None
