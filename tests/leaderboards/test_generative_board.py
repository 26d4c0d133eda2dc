"""The generative leaderboard (leaderboards/generative/board.py): its figures come from the replay, judge
and arena selectors, replaced here by hand-made ones so the Dynascore can be computed by hand."""

from __future__ import annotations

import copy
from decimal import Decimal

import pytest

from core.clustered import clustered_rates
from core.pairwise import Ranking
from generative_bench.judges.selectors import JudgeAgreement, JudgeColumn
from generative_bench.judges.selectors import Rate as JudgeRate
from generative_bench.models import Judge
from generative_bench.replay.selectors import Rate as PeopleRate
from generative_bench.replay.selectors import ReplayFigures
from leaderboards.generative import board as generative_board
from leaderboards.generative.board import BoardError, params_from
from leaderboards.generative.board import generative_board as board_of
from leaderboards.models import Dataset, Score
from models_registry.models import RegisteredModel
from tasks.builtin_configs import RED_TEAM_CONFIG
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


@pytest.mark.parametrize(
    "query",
    [
        {"w_perf": "-1"},
        {"w_perf": "abc"},
        {"r_x": "1"},
        {"w_bt": "1e9"},
        # Unicode digits that str.isdigit() takes: int() refuses the first two (a 500 before), and the
        # third would read as round 1.
        {"r_²": "1"},
        {"r_①": "1"},
        {"r_١": "1"},
        {"r_" + "9" * 30: "1"},
    ],
)
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


def test_each_attack_success_rate_has_its_interval_across_people(world, client, api, outsider, monkeypatch):
    # A's people rate, 3 of 10 answers, written by 5 people: (1, 2), (0, 2), (1, 2), (0, 2), (1, 2).
    clustered = clustered_rates([1, 0, 1, 0, 1], [2, 2, 2, 2, 2])[0]
    a, b = world["a"], world["b"]
    round_id = world["task"].rounds.get().pk
    people = {
        (a.pk, round_id): PeopleRate(failed=3, judged=10, clustered=clustered),
        (b.pk, round_id): PeopleRate(failed=1, judged=10),
    }
    monkeypatch.setattr(generative_board, "people_rates", lambda task: people)
    low, high = clustered.interval
    assert 0 <= low < 0.3 < high <= 1 and clustered.people == 5
    body = api(outsider).get("/api/tasks/rt/leaderboard/generative/").json()
    rows = {row["name"]: row for row in body["rows"]}
    assert rows["A"]["across_people"]["1"]["asr_people"] == {**clustered.as_dict(), "interval": [low, high]}
    assert rows["B"]["across_people"]["1"]["asr_people"] is None
    html = client.get("/tasks/rt/leaderboard/generative/").content.decode()
    assert f"[{100 * low:.0f}–{100 * high:.0f}%, 5 people]" in html


def test_a_task_that_is_not_red_teaming_has_no_generative_leaderboard(hate_task, client, api, outsider):
    assert client.get(f"/tasks/{hate_task.slug}/leaderboard/generative/").status_code == 404
    assert api(outsider).get(f"/api/tasks/{hate_task.slug}/leaderboard/generative/").status_code == 404


@pytest.fixture
def unvalidated(db, monkeypatch):
    """A red-teaming task whose multiple-choice items are not validated yet (no MC accuracy anywhere, as
    on the demo): local A and D, remote B (a chat server), local C; no judge. Figures:

        model  people's ASR  Bradley-Terry (votes)  tokens/s  cost per 1,000 prompts
        A      0.3           1069 (20)              20        none
        B      0.1            970 (10)              40        1.5
        C      0.5            961 (10)              30        none
        D      none          none (no votes)        10        none
    """
    task = Task.objects.create(slug="rt2", name="Red-team 2", config=copy.deepcopy(RED_TEAM_CONFIG))
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
    d = RegisteredModel.objects.create(
        task=task, name="D", path="/nowhere", status="ready", is_published=True
    )
    people = {
        (a.pk, r1.pk): PeopleRate(failed=3, judged=10),
        (b.pk, r1.pk): PeopleRate(failed=1, judged=10),
        (c.pk, r1.pk): PeopleRate(failed=5, judged=10),
    }
    figures = {
        m.pk: ReplayFigures(
            model_id=m.pk,
            answers=10,
            tokens_per_second=tps,
            cost_per_thousand=Decimal("1.5") if m == b else None,
        )
        for m, tps in ((a, 20.0), (b, 40.0), (c, 30.0), (d, 10.0))
    }
    ranking = Ranking(
        scores={a.pk: 1069.0, b.pk: 970.0, c.pk: 961.0, d.pk: 1000.0},
        intervals={a.pk: (1000.0, 1140.0), b.pk: (900.0, 1040.0), c.pk: (890.0, 1030.0), d.pk: None},
        votes_per_pair={frozenset({a.pk, b.pk}): 10, frozenset({a.pk, c.pk}): 10},
        n_votes=20,
        samples=200,
    )
    monkeypatch.setattr(generative_board, "judge_rates", lambda task: [])
    monkeypatch.setattr(generative_board, "people_rates", lambda task: people)
    monkeypatch.setattr(generative_board, "replay_figures", lambda task: figures)
    monkeypatch.setattr(generative_board, "arena_ranking", lambda task: ranking)
    return {"task": task, "a": a, "b": b, "c": c, "d": d}


BT_ONLY = {"w_perf": "0", "w_asr_people": "0", "w_tokens_per_second": "0", "w_bt": "5"}


def test_with_only_bradley_terry_weighted_the_board_ranks_on_it(unvalidated, owner):
    # The query. perf weighs 0 and no model has it, so it cannot be the AMRS's yardstick: the
    # only weighted metric, Bradley-Terry, is (AMRS 1), and with ω̃ = 1 each Dynascore is the score:
    # A 1069 (rank 1), B 970 (2), C 961 (3). (Was: every row rank 1 with Dynascore 0.)
    board = board_of(unvalidated["task"], owner, params_from(BT_ONLY))
    rows = {row["name"]: row for row in board["rows"]}
    assert [row["name"] for row in board["rows"]] == ["A", "B", "C", "D"]
    assert [rows[n]["rank"] for n in "ABC"] == [1, 2, 3]
    assert [rows[n]["dynascore"] for n in "ABC"] == [
        pytest.approx(1069),
        pytest.approx(970),
        pytest.approx(961),
    ]
    assert board["reference"] == "bt" and board["reference_label"] == "Bradley-Terry"
    # A metric weighted 0 neither counts nor makes a row incomplete: no MC accuracy anywhere, yet A, B
    # and C are complete; nothing weighted is left out.
    assert all(rows[n]["complete"] and rows[n]["missing"] == [] and rows[n]["notes"] == [] for n in "ABC")
    assert board["left_out"] == {}
    # D has no vote: not ranked, and its row says why in a sentence naming the metric.
    assert rows["D"]["rank"] is None and rows["D"]["dynascore"] is None and not rows["D"]["complete"]
    assert rows["D"]["missing"] == ["bt"]
    assert rows["D"]["notes"] == [
        "Bradley-Terry: none (no arena votes counted); not ranked while Bradley-Terry counts: set its "
        "weight to 0 to rank this model."
    ]


def test_default_weights_rank_before_any_multiple_choice_item_is_validated(unvalidated, owner):
    # Weights: perf 4, people's ASR 2, Bradley-Terry 2, tokens/s 1 (9 in all; the rest 0). No model has
    # an MC accuracy: perf is left out ("no model has a value") and the yardstick is the weighted metric
    # of largest weight, people's ASR (2, tied with Bradley-Terry and first in column order).
    # x' = 1 - ASR: C 0.5, A 0.7, B 0.9 (sorted), neighbours 0.2 apart:
    #   AMRS bt  = mean(|1069 - 961| / 0.2, |970 - 1069| / 0.2) = mean(540, 495) = 517.5
    #   AMRS tps = mean(|20 - 30| / 0.2, |40 - 20| / 0.2) = mean(50, 100) = 75
    # A = (2 * 0.7 + 2 * 1069 / 517.5 + 20 / 75) / 9 = 5.7980676 / 9 = 0.6442297
    # B = (2 * 0.9 + 2 * 970 / 517.5 + 40 / 75) / 9 = 6.0821256 / 9 = 0.6757917
    # C = (2 * 0.5 + 2 * 961 / 517.5 + 30 / 75) / 9 = 5.1140097 / 9 = 0.5682233
    board = board_of(unvalidated["task"], owner)
    rows = {row["name"]: row for row in board["rows"]}
    assert board["reference"] == "asr_people"
    assert board["amrs"]["bt"] == pytest.approx(517.5) and board["amrs"][
        "tokens_per_second"
    ] == pytest.approx(75)
    assert rows["A"]["dynascore"] == pytest.approx(0.6442297, abs=1e-7)
    assert rows["B"]["dynascore"] == pytest.approx(0.6757917, abs=1e-7)
    assert rows["C"]["dynascore"] == pytest.approx(0.5682233, abs=1e-7)
    assert [row["name"] for row in board["rows"]] == ["B", "A", "C", "D"]
    assert [rows[n]["rank"] for n in "BAC"] == [1, 2, 3]
    assert board["left_out"] == {"perf": "no model has a value"}
    # MC accuracy, left out for every model, is said once above the table: it makes no row incomplete
    # and adds no note to a row.
    assert rows["A"]["notes"] == [] and rows["A"]["missing"] == ["perf"]
    assert [rows[n]["complete"] for n in "ABC"] == [True, True, True]
    # D lacks people's ASR and Bradley-Terry, which count: no rank, incomplete, one sentence per metric.
    assert rows["D"]["rank"] is None and not rows["D"]["complete"]
    assert rows["D"]["notes"] == [
        "Attack success rate (people): none; not ranked while Attack success rate (people) counts: set its "
        "weight to 0 to rank this model.",
        "Bradley-Terry: none (no arena votes counted); not ranked while Bradley-Terry counts: set its weight "
        "to 0 to rank this model.",
    ]


def test_left_out_metrics_and_their_reasons_are_named_by_label_on_the_page(unvalidated, client):
    # Cost weighted, and only B has one: its AMRS against people's ASR is undefined, so it is left out,
    # and the page names it and the yardstick by their labels, not their keys.
    html = client.get("/tasks/rt2/leaderboard/generative/", {"w_cost": "1"}).content.decode()
    left_out = html.split("Left out of the Dynascore", 1)[1]
    assert "<li>MC accuracy: no model has a value</li>" in left_out
    assert (
        "<li>Cost per 1,000 prompts: AMRS undefined: 1 model with complete Attack success rate (people) "
        "and Cost per 1,000 prompts values</li>" in left_out
    )
    for key in ("asr_people", "tokens_per_second", ">bt", "perf:", " cost"):
        assert key not in left_out
    assert "the AMRS are measured against Attack success rate (people)" in html
    # The query on the page: ranks 1, 2, 3 and the scores, no shared rank 1 at 0.00.
    html = client.get("/tasks/rt2/leaderboard/generative/", BT_ONLY).content.decode()
    assert all(f"<td>{score}</td>" in html for score in ("1069.00", "970.00", "961.00"))
    assert "<td>0.00</td>" not in html
    assert "Bradley-Terry: none (no arena votes counted); not ranked while Bradley-Terry counts" in html
    assert "(remote chat server)" in html


def test_a_remote_chat_model_is_not_labelled_pytorch(world, client, owner):
    # B is served by an OpenAI-compatible chat server: the task's leaderboard badge and its model page
    # say so, and its memory is not measurable (not a missing score).
    from models_registry.runtime_facts import runtime_facts

    client.force_login(owner)
    rows = {r["name"]: r for r in client.get("/tasks/rt/leaderboard/").context["table"]["rows"]}
    assert (rows["B"]["runtime"], rows["B"]["runtime_label"]) == ("chat_endpoint", "remote chat server")
    assert rows["B"]["runtime_text"] == "remote chat server"
    assert rows["B"]["not_measurable"] == {"memory": "memory not measurable for remote chat servers"}
    assert rows["A"]["runtime_label"] == "PyTorch"
    assert runtime_facts(world["b"])["label"] == "remote chat server"
    page = client.get(f"/models/{world['b'].pk}/")
    assert page.status_code == 200 and "remote chat server" in page.content.decode()


def test_a_red_teaming_task_leads_to_its_generative_leaderboard(unvalidated, client):
    """The task page's "Leaderboard", the arena's pages, the judges page and the per-dataset board all
    lead to the generative leaderboard: nothing else links it."""
    board = '<a href="/tasks/rt2/leaderboard/generative/">'
    task_page = client.get("/tasks/rt2/").content.decode()
    assert f"{board}Leaderboard</a>" in task_page
    assert '<a href="/tasks/rt2/leaderboard/">Scores per dataset</a>' in task_page
    assert f"{board}its generative leaderboard</a>" in client.get("/tasks/rt2/leaderboard/").content.decode()
    for page in ("/tasks/rt2/arena/ranking/", "/tasks/rt2/judges/"):
        assert f"{board}Leaderboard</a>" in client.get(page).content.decode(), page
