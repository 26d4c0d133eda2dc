"""The generative leaderboard (leaderboards/generative_board.py): its figures come from the replay, judge
and arena selectors, replaced here by hand-made ones so the Dynascore can be computed by hand."""

from __future__ import annotations

import copy
from decimal import Decimal

import pytest

from core.pairwise import Ranking
from generative_bench.judges.selectors import JudgeAgreement, JudgeColumn
from generative_bench.judges.selectors import Rate as JudgeRate
from generative_bench.models import Judge
from generative_bench.replay.selectors import Rate as PeopleRate
from generative_bench.replay.selectors import ReplayFigures
from leaderboards import generative_board
from leaderboards.generative_board import BoardError, params_from
from leaderboards.generative_board import generative_board as board_of
from leaderboards.models import Dataset, Score
from models_registry.models import RegisteredModel
from tasks.config import RED_TEAM_CONFIG
from tasks.models import Task
from tasks.services import ensure_round


@pytest.fixture
def world(db, monkeypatch):
    """A red-teaming task with round 1, local model A, remote model B and model C with no figures; a
    trusted judge and an untrusted one; the selectors' figures as in the test's comments."""
    task = Task.objects.create(slug="rt", name="Red-team", config=copy.deepcopy(RED_TEAM_CONFIG))
    r1 = ensure_round(task=task, number=1)
    a = RegisteredModel.objects.create(
        task=task, name="A", path="/nowhere", status="ready", is_published=True
    )
    b = RegisteredModel.objects.create(
        task=task, name="B", source="chat_endpoint", status="ready", is_published=True
    )
    c = RegisteredModel.objects.create(
        task=task, name="C", path="/nowhere", status="ready", is_published=True
    )
    dataset = Dataset.objects.create(
        task=task, slug="r1", name="Round 1", kind="round", access="scoring", round=r1
    )
    Score.objects.create(model=a, dataset=dataset, status="done", perf=0.6, metrics={"memory": 0.5})
    Score.objects.create(model=b, dataset=dataset, status="done", perf=0.8, metrics={"memory": None})
    good = Judge.objects.create(task=task, model=a, name="good judge", prompt_template="x")
    weak = Judge.objects.create(task=task, model=a, name="weak judge", prompt_template="x")
    agreement = JudgeAgreement(n=40, kappa=0.7, kappa_interval=(0.5, 0.85), raw=0.9, raw_interval=(0.8, 0.97))
    poor = JudgeAgreement(n=40, kappa=0.1, kappa_interval=(-0.2, 0.4), raw=0.6, raw_interval=(0.45, 0.75))
    columns = [
        JudgeColumn(
            judge=good,
            trusted=True,
            agreement=agreement,
            rates={
                (a.pk, r1.pk): JudgeRate(judged=10, failed=5),
                (b.pk, r1.pk): JudgeRate(judged=10, failed=2),
            },
        ),
        JudgeColumn(
            judge=weak,
            trusted=False,
            agreement=poor,
            rates={
                (a.pk, r1.pk): JudgeRate(judged=10, failed=0),
                (b.pk, r1.pk): JudgeRate(judged=10, failed=9),
            },
        ),
    ]
    people = {(a.pk, r1.pk): PeopleRate(failed=3, judged=10), (b.pk, r1.pk): PeopleRate(failed=1, judged=10)}
    figures = {
        a.pk: ReplayFigures(model_id=a.pk, answers=10, tokens_per_second=20.0, first_token_seconds=0.3),
        b.pk: ReplayFigures(
            model_id=b.pk,
            answers=10,
            tokens_per_second=40.0,
            first_token_seconds=0.6,
            cost_per_thousand=Decimal("1.5"),
        ),
    }
    ranking = Ranking(
        scores={a.pk: 950.0, b.pk: 1050.0, c.pk: 1000.0},
        intervals={a.pk: (900.0, 1000.0), b.pk: (1000.0, 1100.0), c.pk: None},
        votes_per_pair={frozenset({a.pk, b.pk}): 30},
        n_votes=30,
        samples=200,
    )
    monkeypatch.setattr(generative_board, "judge_rates", lambda task: columns)
    monkeypatch.setattr(generative_board, "people_rates", lambda task: people)
    monkeypatch.setattr(generative_board, "replay_figures", lambda task: figures)
    monkeypatch.setattr(generative_board, "arena_ranking", lambda task: ranking)
    return {"task": task, "a": a, "b": b, "c": c, "good": good, "weak": weak}


def test_the_dynascore_over_accuracy_attack_success_rates_bradley_terry_and_speed(world, owner):
    # Default weights: perf 4, asr_people 2, the trusted judge 1, bt 2, tokens/s 1; the untrusted judge,
    # first token, memory and cost 0: 10 in all. Sorted by perf: A (0.6), B (0.8), Δperf = 0.2.
    #   asr_people: x' = 1 - 0.3 = 0.7 and 1 - 0.1 = 0.9 -> AMRS = 0.2 / 0.2 = 1
    #   good judge: x' = 1 - 0.5 = 0.5 and 1 - 0.2 = 0.8 -> AMRS = 0.3 / 0.2 = 1.5
    #   bt: 950 and 1050 -> AMRS = 100 / 0.2 = 500; tokens/s: 20 and 40 -> AMRS = 100
    # A = (4 * 0.6 + 2 * 0.7 + 0.5 / 1.5 + 2 * 950 / 500 + 20 / 100) / 10 = 8.1333 / 10
    # B = (4 * 0.8 + 2 * 0.9 + 0.8 / 1.5 + 2 * 1050 / 500 + 40 / 100) / 10 = 10.1333 / 10
    board = board_of(world["task"], owner)
    rows = {row["name"]: row for row in board["rows"]}
    assert [row["name"] for row in board["rows"]] == ["B", "A", "C"]
    assert rows["A"]["dynascore"] == pytest.approx(0.813333, abs=1e-5)
    assert rows["B"]["dynascore"] == pytest.approx(1.013333, abs=1e-5)
    assert (rows["B"]["rank"], rows["A"]["rank"]) == (1, 2)
    assert board["amrs"]["asr_people"] == pytest.approx(1.0) and board["amrs"]["bt"] == pytest.approx(500)
    # The values are shown in their own units: rates, not their flipped x'.
    assert rows["A"]["values"]["asr_people"] == pytest.approx(0.3)
    assert rows["B"]["values"]["cost"] == pytest.approx(1.5) and rows["A"]["values"]["cost"] is None
    assert rows["A"]["values"]["memory"] == pytest.approx(0.5) and rows["B"]["values"]["memory"] is None
    assert rows["B"]["bt_interval"] == [1000.0, 1100.0] and rows["B"]["bt_votes"] == 30
    # C has no figure at all: kept, incomplete, no Dynascore; its Bradley-Terry score is not shown.
    assert rows["C"]["dynascore"] is None and rows["C"]["rank"] is None and not rows["C"]["complete"]
    assert rows["C"]["values"]["bt"] is None and rows["C"]["bt_interval"] is None
    # The untrusted judge is shown, flagged, and weighs 0.
    weak = next(m for m in board["metrics"] if m["name"] == f"asr_judge_{world['weak'].pk}")
    assert (weak["trusted"], weak["weight"], weak["lower_is_better"]) == (False, 0.0, True)
    assert rows["A"]["values"][weak["name"]] == pytest.approx(0.0)


def test_viewer_weights_and_an_untrusted_judge_the_viewer_cannot_weigh(world, owner):
    weak = f"asr_judge_{world['weak'].pk}"
    params = params_from(
        {
            "w_perf": "1",
            "w_asr_people": "0",
            f"w_asr_judge_{world['good'].pk}": "0",
            "w_bt": "0",
            "w_tokens_per_second": "0",
            "w_first_token": "1",
            weak: "5",
        }
    )
    board = board_of(world["task"], owner, params)
    rows = {row["name"]: row for row in board["rows"]}
    # perf 1 and first token 1 (lower is better, ceiling = the largest, 0.6 s): x' = 0.3 (A), 0 (B);
    # AMRS = 0.3 / 0.2 = 1.5; A = (0.6 + 0.3 / 1.5) / 2 = 0.4, B = (0.8 + 0) / 2 = 0.4: a tie, rank 1 each.
    assert rows["A"]["dynascore"] == pytest.approx(0.4) and rows["B"]["dynascore"] == pytest.approx(0.4)
    assert rows["A"]["rank"] == rows["B"]["rank"] == 1
    # Sharing a rank, they are listed by Bradley-Terry: B (1050) before A (950).
    assert [row["name"] for row in board["rows"]][:2] == ["B", "A"]
    assert next(m for m in board["metrics"] if m["name"] == weak)["weight"] == 0.0


@pytest.mark.parametrize("query", [{"w_perf": "-1"}, {"w_perf": "abc"}, {"r_x": "1"}, {"w_bt": "1e9"}])
def test_a_bad_weight_is_refused_with_its_name(query):
    with pytest.raises(BoardError, match=next(iter(query))):
        params_from(query)


def test_the_page_and_the_api(world, client, outsider, api):
    html = client.get("/tasks/rt/leaderboard/generative/").content.decode()
    assert "Generative leaderboard" in html and "not trusted" in html and "weak judge" in html
    assert "[1000, 1100] · 30 votes" in html and "incomplete" in html
    assert client.get("/tasks/rt/leaderboard/generative/?w_perf=-2").status_code == 400
    response = api(outsider).get("/api/tasks/rt/leaderboard/generative/")
    assert response.status_code == 200 and [r["name"] for r in response.json()["rows"]] == ["B", "A", "C"]
    assert api(outsider).get("/api/tasks/rt/leaderboard/generative/?w_perf=x").status_code == 400


def test_a_task_that_is_not_red_teaming_has_no_generative_leaderboard(hate_task, client, api, outsider):
    assert client.get(f"/tasks/{hate_task.slug}/leaderboard/generative/").status_code == 404
    assert api(outsider).get(f"/api/tasks/{hate_task.slug}/leaderboard/generative/").status_code == 404
