"""``GET /api/tasks/{slug}/leaderboard/``: the page's table, custom weights, field errors."""

from __future__ import annotations

import pytest
from django.urls import reverse

from leaderboards.models import Dataset, Score
from models_registry.models import RegisteredModel
from tests.factories.leaderboards import DatasetFactory
from tests.factories.models_registry import RegisteredModelFactory
from tests.helpers.api import forced_client as api

URL = "/api/tasks/hate-speech/leaderboard/"
ZERO_REST = "memory:0,fairness:0,robustness:0"


def _score(model, dataset, perf, throughput, *, memory=1.0, fairness=0.9, robustness=0.9):
    metrics = {"throughput": throughput, "memory": memory, "fairness": fairness, "robustness": robustness}
    return Score.objects.create(
        model=model, dataset=dataset, status=Score.Status.DONE, perf=perf, metrics=metrics
    )


@pytest.fixture
def board(hate_task, hate_round):
    """Three published models on one scoring dataset of round 1 (the page tests' hand values).

    Memory, fairness and robustness are equal for all, so their AMRS is 0 and they are left out. Sorted
    by perf: R 0.3, Q 0.6, P 0.9; AMRS_throughput = mean(|400 - 250| / 0.3, |100 - 400| / 0.3)
    = mean(500, 1000) = 750.
    """
    d = DatasetFactory(task=hate_task, slug="r1", round=hate_round)
    p, q, r = (
        RegisteredModelFactory(task=hate_task, name="P"),
        RegisteredModelFactory(task=hate_task, name="Q"),
        RegisteredModelFactory(task=hate_task, name="R"),
    )
    _score(p, d, 0.9, 100)
    _score(q, d, 0.6, 400)
    _score(r, d, 0.3, 250)
    return {"d": d, "P": p, "Q": q, "R": r}


def by_name(body) -> dict[str, dict]:
    return {row["name"]: row for row in body["rows"]}


def test_default_weights_give_the_hand_computed_dynascores(board):
    # ω̃ = 4/8 perf and 1/8 each other metric; only perf and throughput count (the others are left out):
    # P = 0.5 * 0.9 + 0.125 * 100 / 750 = 0.466667, Q = 0.3 + 0.125 * 400 / 750 = 0.366667,
    # R = 0.15 + 0.125 * 250 / 750 = 0.191667.
    response = api().get(URL)
    assert response.status_code == 200
    body = response.json()
    rows = by_name(body)
    assert [r["name"] for r in body["rows"]] == ["P", "Q", "R"]
    assert rows["P"]["dynascore"] == pytest.approx(0.45 + 0.125 * 100 / 750)
    assert rows["Q"]["dynascore"] == pytest.approx(0.3 + 0.125 * 400 / 750)
    assert rows["R"]["dynascore"] == pytest.approx(0.15 + 0.125 * 250 / 750)
    assert [rows[n]["rank"] for n in "PQR"] == [1, 2, 3]
    assert body["amrs"]["throughput"] == pytest.approx(750)
    assert body["amrs"]["perf"] == 1.0
    assert set(body["left_out"]) == {"memory", "fairness", "robustness"}
    assert body["metric_weights"] == {"perf": 4, "throughput": 1, "memory": 1, "fairness": 1, "robustness": 1}
    assert body["normalised_metric_weights"]["perf"] == pytest.approx(0.5)
    assert rows["P"]["complete"] is True and rows["P"]["missing"] == []
    assert rows["Q"]["metrics"] == {
        "perf": pytest.approx(0.6),
        "throughput": pytest.approx(400),
        "memory": pytest.approx(1.0),
        "fairness": pytest.approx(0.9),
        "robustness": pytest.approx(0.9),
    }
    assert rows["Q"]["x"]["memory"] == pytest.approx(16 - 1.0)  # M - memory
    assert rows["Q"]["datasets"] == {str(board["d"].pk): pytest.approx(0.6)}
    assert body["datasets"] == [
        {"id": board["d"].pk, "name": "R1", "round": 1, "weight": 1.0, "normalised": 1.0}
    ]


def test_custom_metric_weights_equal_the_page_and_the_hand_computation(client, board, hate_task):
    # perf 1, throughput 1, others 0: ω̃ = 1/2 each. P = 0.45 + 0.5 * 100/750 = 0.516667,
    # Q = 0.3 + 0.5 * 400/750 = 0.566667, R = 0.15 + 0.5 * 250/750 = 0.316667 -> Q, P, R.
    body = api().get(URL, {"metric_weights": f"perf:1,throughput:1,{ZERO_REST}"}).json()
    assert [r["name"] for r in body["rows"]] == ["Q", "P", "R"]
    rows = by_name(body)
    assert rows["Q"]["dynascore"] == pytest.approx(0.3 + 0.5 * 400 / 750)
    assert rows["P"]["dynascore"] == pytest.approx(0.45 + 0.5 * 100 / 750)
    assert rows["R"]["dynascore"] == pytest.approx(0.15 + 0.5 * 250 / 750)
    page = client.get(
        reverse("leaderboards:leaderboard", args=[hate_task.slug]),
        {"w_perf": 1, "w_throughput": 1, "w_memory": 0, "w_fairness": 0, "w_robustness": 0},
    )
    page_rows = {r["name"]: r["dynascore"] for r in page.context["table"]["rows"]}
    assert {name: row["dynascore"] for name, row in rows.items()} == pytest.approx(page_rows)


def test_metrics_not_named_keep_their_default_weight(board):
    # Only perf named (4, its default): the same as no weights at all.
    named = api().get(URL, {"metric_weights": "perf:4"}).json()
    default = api().get(URL).json()
    assert [r["dynascore"] for r in named["rows"]] == pytest.approx([r["dynascore"] for r in default["rows"]])


def test_dataset_weights_and_rounds(board, hate_task):
    hc = DatasetFactory(task=hate_task, slug="hc")
    _score(board["P"], hc, 0.1, 100)
    _score(board["Q"], hc, 0.2, 400)
    _score(board["R"], hc, 0.9, 250)
    perf_only = f"perf:1,throughput:0,{ZERO_REST}"
    # Only HateCheck counts: R 0.9, Q 0.2, P 0.1.
    body = (
        api()
        .get(URL, {"metric_weights": perf_only, "dataset_weights": f"{board['d'].pk}:0,{hc.pk}:1"})
        .json()
    )
    assert [r["name"] for r in body["rows"]] == ["R", "Q", "P"]
    assert by_name(body)["R"]["dynascore"] == pytest.approx(0.9)
    # Weights 3 (round 1) and 1 (HateCheck): P = 0.75 * 0.9 + 0.25 * 0.1 = 0.7, Q = 0.45 + 0.05 = 0.5,
    # R = 0.225 + 0.225 = 0.45.
    body = (
        api()
        .get(URL, {"metric_weights": perf_only, "dataset_weights": f"{board['d'].pk}:3,{hc.pk}:1"})
        .json()
    )
    assert [by_name(body)[n]["dynascore"] for n in "PQR"] == pytest.approx([0.7, 0.5, 0.45])
    assert {d["id"]: d["normalised"] for d in body["datasets"]} == {board["d"].pk: 0.75, hc.pk: 0.25}
    # Round 1 only: HateCheck (no round) is not ranked.
    body = api().get(URL, {"round": "1"}).json()
    assert body["round"] == 1 and [d["id"] for d in body["datasets"]] == [board["d"].pk]


def test_incomplete_and_unpublished_models(board, hate_task, owner):
    late = RegisteredModelFactory(task=hate_task, name="late")  # ready, no score yet
    draft = RegisteredModelFactory(task=hate_task, name="draft", is_published=False)
    _score(draft, board["d"], 0.5, 300)
    rows = by_name(api().get(URL).json())
    assert "draft" not in rows
    assert (
        rows["late"]["complete"] is False
        and rows["late"]["dynascore"] is None
        and rows["late"]["rank"] is None
    )
    assert "draft" in by_name(api(owner).get(URL).json())
    assert late.pk in [r["model_id"] for r in api().get(URL).json()["rows"]]


def test_an_anonymous_model_is_named_anonymous_to_others(board, hate_task, owner):
    RegisteredModel.objects.filter(pk=board["Q"].pk).update(is_anonymous=True)
    assert "Anonymous model 1" in by_name(api().get(URL).json())
    assert "Q" in by_name(api(owner).get(URL).json())


@pytest.mark.parametrize(
    ("query", "field", "message"),
    [
        ({"metric_weights": "perf:abc"}, "metric_weights", "The weight of perf ('abc') is not a number."),
        ({"metric_weights": "perf:-1"}, "metric_weights", "must be a number from 0 to 1,000,000."),
        ({"metric_weights": "perf:inf"}, "metric_weights", "must be a number from 0 to 1,000,000."),
        ({"metric_weights": "speed:1"}, "metric_weights", "Unknown metric 'speed'"),
        ({"metric_weights": "perf"}, "metric_weights", "is not NAME:WEIGHT"),
        ({"metric_weights": "perf:1,perf:2"}, "metric_weights", "given twice"),
        (
            {"metric_weights": "perf:0,throughput:0,memory:0,fairness:0,robustness:0"},
            "metric_weights",
            "All metric weights are zero.",
        ),
        ({"dataset_weights": "999999:1"}, "dataset_weights", "Unknown dataset '999999'"),
        ({"round": "7"}, "round", "Round '7' has no scoring dataset."),
        ({"round": "😀"}, "round", "has no scoring dataset"),
        ({"sort": "bogus"}, "sort", "Cannot sort by 'bogus'."),
        ({"dir": "up"}, "dir", "is not a valid choice"),
    ],
)
def test_a_bad_query_is_a_400_naming_the_parameter(board, query, field, message):
    response = api().get(URL, query)
    assert response.status_code == 400
    body = response.json()
    assert set(body) == {field}
    assert any(message in m for m in body[field]), body


def test_dataset_weights_are_checked_against_scoring_datasets(board, hate_task):
    hidden = DatasetFactory(task=hate_task, slug="hidden", access=Dataset.Access.HIDDEN)
    response = api().get(URL, {"dataset_weights": f"{hidden.pk}:1,{board['d'].pk}:0"})
    assert response.status_code == 400
    assert f"Unknown dataset '{hidden.pk}'" in response.json()["dataset_weights"][0]
    response = api().get(URL, {"dataset_weights": f"{board['d'].pk}:0"})
    assert response.status_code == 400
    assert response.json()["dataset_weights"] == ["All dataset weights are zero."]


def test_unknown_task_and_no_scoring_dataset(hate_task):
    assert api().get("/api/tasks/nope/leaderboard/").status_code == 404
    body = api().get(URL).json()
    assert body["rows"] == [] and body["error"] == "This task has no scoring dataset yet."
