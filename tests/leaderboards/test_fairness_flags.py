"""Fairness flags on the leaderboard (Phang et al. 2022): cells built against a model, the rank without
them, and Kendall's tau between the rounds' orders; values computed by hand."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from core.rank_correlation import kendall_tau
from leaderboards.models import Score
from models_registry.round_targets import set_round_targets
from tasks.services import ensure_round
from tests.factories.leaderboards import DatasetFactory
from tests.factories.models_registry import RegisteredModelFactory
from tests.helpers.api import forced_client as api

URL = (
    "/api/tasks/hate-speech/leaderboard/?metric_weights=perf:1,throughput:0,memory:0,fairness:0,robustness:0"
)
#: perf of models A, B, C on round 1-3's test sets and on a static set (HateCheck's stand-in).
PERF = {
    "r1": {"A": 0.5, "B": 0.9, "C": 0.7},
    "r2": {"A": 0.8, "B": 0.9, "C": 0.6},
    "r3": {"A": 0.9, "B": 0.6, "C": 0.7},
    "hc": {"A": 0.8, "B": 0.5, "C": 0.7},
}


@pytest.fixture
def board(hate_task, hate_round):
    """A was round 1's target; B was trained on rounds 1-2 (its card); C on neither."""
    rounds = {
        1: hate_round,
        2: ensure_round(task=hate_task, number=2),
        3: ensure_round(task=hate_task, number=3),
    }
    datasets = {
        f"r{n}": DatasetFactory(task=hate_task, slug=f"round-{n}-test", round=r) for n, r in rounds.items()
    }
    datasets["hc"] = DatasetFactory(task=hate_task, slug="hatecheck")
    models = {
        "A": RegisteredModelFactory(task=hate_task, name="A"),
        "B": RegisteredModelFactory(task=hate_task, name="B", card={"training": {"rounds": [1, 2]}}),
        "C": RegisteredModelFactory(task=hate_task, name="C"),
    }
    set_round_targets(round=hate_round, models=[models["A"]])
    for slug, perfs in PERF.items():
        for name, perf in perfs.items():
            Score.objects.create(
                model=models[name],
                dataset=datasets[slug],
                status=Score.Status.DONE,
                perf=perf,
                metrics={"throughput": 100, "memory": 1.0, "fairness": 0.9, "robustness": 0.9},
            )
    return {"datasets": datasets, "models": models}


def rows_by_name(body):
    return {row["name"]: row for row in body["rows"]}


def test_cells_built_against_a_model_are_flagged(board):
    body = api().get(URL).json()
    d = {slug: str(ds.pk) for slug, ds in board["datasets"].items()}
    rows = rows_by_name(body)
    assert rows["A"]["flags"] == {d["r1"]: ["target"]}
    assert rows["B"]["flags"] == {d["r1"]: ["trained"], d["r2"]: ["trained"]}
    assert rows["C"]["flags"] == {}
    assert body["flagged"] is True


def test_each_flagged_row_is_ranked_without_its_own_flagged_rounds(board):
    body = api().get(URL).json()
    rows = rows_by_name(body)
    # Only perf weighs: the Dynascore is the mean perf. All four datasets: A 0.75, B 0.725, C 0.675.
    assert [rows[n]["rank"] for n in "ABC"] == [1, 2, 3]
    assert rows["B"]["dynascore"] == pytest.approx(0.725)
    # A without round 1 (rounds 2, 3 and the static set): A 0.833, B 0.667, C 0.667: A first.
    # B without rounds 1-2 (round 3 and the static set): A 0.85, C 0.70, B 0.55: B third.
    # C has no flag: its rank.
    assert [rows[n]["rank_without_flagged"] for n in "ABC"] == [1, 3, 3]


def test_kendall_tau_between_each_pair_of_rounds(board):
    body = api().get(URL).json()
    # Round 1: B > C > A; round 2: B > A > C; round 3: A > C > B.
    # (1, 2): concordant A-B and B-C, discordant A-C: (2 - 1) / 3. (1, 3): all 3 discordant: -1.
    # (2, 3): concordant A-C only: (1 - 2) / 3.
    taus = {tuple(a["rounds"]): (a["tau"], a["n"]) for a in body["kendall_tau"]}
    assert taus == {
        (1, 2): (pytest.approx(1 / 3), 3),
        (1, 3): (pytest.approx(-1.0), 3),
        (2, 3): (pytest.approx(-1 / 3), 3),
    }


def test_the_page_marks_the_cells_and_explains_them(board):
    page = Client().get(reverse("leaderboards:leaderboard", args=["hate-speech"])).content.decode()
    assert page.count('class="num flagged"') == 3  # A on round 1, B on rounds 1 and 2
    assert "(built against this model: the model was a target of this round" in page
    assert "(built against this model: the model was trained on this round" in page
    assert "Rank without flagged rounds" in page
    assert 'Round 1 and round 3</th><td class="num">-1.00</td>' in page
    assert "Phang et al. 2022" in page


def test_a_board_with_nothing_flagged_shows_no_flag_column(hate_task, hate_round):
    d = DatasetFactory(task=hate_task, slug="round-1-test", round=hate_round)
    m = RegisteredModelFactory(task=hate_task, name="M")
    Score.objects.create(model=m, dataset=d, status=Score.Status.DONE, perf=0.7, metrics={"throughput": 1})
    body = api().get(URL).json()
    assert body["flagged"] is False and body["rows"][0]["flags"] == {}
    assert body["rows"][0]["rank_without_flagged"] == body["rows"][0]["rank"] == 1
    assert body["kendall_tau"] == []
    page = Client().get(reverse("leaderboards:leaderboard", args=["hate-speech"])).content.decode()
    assert "Rank without flagged rounds" not in page


@pytest.mark.parametrize(
    ("xs", "ys", "expected"),
    [
        ([3, 2, 1], [3, 1, 2], 1 / 3),
        ([1, 2, 3, 4], [4, 3, 2, 1], -1.0),
        # tau-b with a tie in xs: C = 2, D = 0, T_x = 1: 2 / sqrt(3 * 2).
        ([1, 2, 2], [1, 2, 3], 2 / 6**0.5),
    ],
)
def test_kendall_tau_b_by_hand(xs, ys, expected):
    assert kendall_tau(xs, ys) == pytest.approx(expected)


def test_kendall_tau_is_undefined_for_one_item_or_all_tied():
    assert kendall_tau([1], [2]) is None
    assert kendall_tau([1, 1, 1], [1, 2, 3]) is None
    with pytest.raises(ValueError, match="differ in length: 2 and 3"):
        kendall_tau([1, 2], [1, 2, 3])
