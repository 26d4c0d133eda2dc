"""The cycle matrix (cycle/matrix/selectors.py): every round target against every round's validated test
examples and the static sets, with n and the Wilson 95% interval, on the task page and in the API.

The world (``cycle``): hate-speech with rounds 1 and 2; ``early`` is round 1's target, ``late`` round
2's, ``other`` a ready model that was never a target; each test set has 20 items. Fooling rates, counts
and intervals below are computed by hand (Wilson 1927, z = 1.959964):

    round 1 test:  early 16/20 = 0.80 [0.5840, 0.9193]   late  2/20 = 0.10 [0.0279, 0.3010]  -> apart
    round 2 test:  early 14/20 = 0.70 [0.4810, 0.8545]   late  8/20 = 0.40 [0.2188, 0.6134]  -> overlap
    HatemojiCheck: early  6/20 = 0.30 [0.1455, 0.5190]   late  3/20 = 0.15 [0.0524, 0.3604]  -> overlap
    HateCheck:     early 10/20 = 0.50 [0.2993, 0.7007]   late  a score with perf only: "not counted"
"""

from __future__ import annotations

import pytest

from cycle.matrix.selectors import (
    INSIDE_THE_INTERVAL,
    CycleCell,
    CycleColumn,
    CycleRow,
    cycle_matrix,
    fooled_of,
    interval_notes,
)
from models_registry.round_targets import set_round_targets
from tasks import page_sections
from tasks.rules import count_fooled
from tasks.services import ensure_round, set_current_round
from tests.factories.leaderboards import DatasetFactory, ScoreFactory
from tests.factories.models_registry import RegisteredModelFactory

pytestmark = pytest.mark.django_db


def _score(model, dataset, metrics, perf=0.5):
    return ScoreFactory(model=model, dataset=dataset, perf=perf, metrics=metrics)


@pytest.fixture
def cycle(hate_task):
    r1 = ensure_round(task=hate_task, number=1)
    r2 = ensure_round(task=hate_task, number=2)
    set_current_round(task=hate_task, round_=r2)
    early = RegisteredModelFactory(task=hate_task, name="early")
    late = RegisteredModelFactory(task=hate_task, name="late")
    other = RegisteredModelFactory(task=hate_task, name="other")
    set_round_targets(round=r1, models=[early])
    set_round_targets(round=r2, models=[late])

    def round_set(round_, split, access="scoring"):
        return DatasetFactory(
            task=hate_task,
            slug=f"round-{round_.number}-{split}",
            name=f"Round {round_.number} {split}",
            round=round_,
            kind="round",
            split=split,
            access=access,
        )

    t1, t2 = round_set(r1, "test"), round_set(r2, "test")
    dev = round_set(r1, "dev", access="standard")  # not a test split: no column
    train = round_set(r1, "train", access="hidden")
    hatecheck = DatasetFactory(
        task=hate_task, slug="hatecheck", name="HateCheck", kind="static", split="test"
    )
    hatemoji = DatasetFactory(
        task=hate_task, slug="hatemoji-check", name="HatemojiCheck", kind="static", split="test"
    )
    # Classifier scores as the evaluation stores them: accuracy and n (fooled = (1 - accuracy) * n) ...
    _score(early, t1, {"accuracy": 0.2, "n": 20})
    _score(late, t1, {"accuracy": 0.9, "n": 20})
    _score(other, t1, {"accuracy": 0.5, "n": 20})
    _score(early, t2, {"accuracy": 0.3, "n": 20})
    # ... and, since the cycle matrix, the count itself.
    _score(late, t2, {"accuracy": 0.6, "n": 20, "fooled": 8, "fooled_rule": "label differs"})
    _score(early, hatecheck, {"accuracy": 0.5, "n": 20})
    _score(late, hatecheck, {"throughput": 100.0})  # an old score: perf only
    _score(early, hatemoji, {"accuracy": 0.7, "n": 20})
    _score(late, hatemoji, {"accuracy": 0.85, "n": 20})
    _score(early, dev, {"accuracy": 0.1, "n": 20})
    _score(early, train, {"accuracy": 0.1, "n": 20})
    ScoreFactory(model=late, dataset=dev, status="failed", perf=None, metrics={})
    return {
        "r1": r1,
        "r2": r2,
        "early": early,
        "late": late,
        "other": other,
        "t1": t1,
        "t2": t2,
        "hatecheck": hatecheck,
        "hatemoji": hatemoji,
    }


def _cell(table, model, dataset):
    [row] = [r for r in table.rows if r.model_id == model.pk]
    [index] = [i for i, c in enumerate(table.columns) if c.dataset_id == dataset.pk]
    return row.cells[index]


def _figures(cell: CycleCell):
    return (cell.fooled, cell.n, cell.rate, cell.low, cell.high)


def test_round_columns_rows_and_hand_computed_cells(cycle, hate_task):
    from django.contrib.auth.models import AnonymousUser

    matrix = cycle_matrix(hate_task, AnonymousUser())
    rounds = matrix.rounds
    assert [(c.slug, c.round) for c in rounds.columns] == [("round-1-test", 1), ("round-2-test", 2)]
    assert [(r.name, r.target_of, r.target_text) for r in rounds.rows] == [
        ("early", (1,), "target of round 1"),
        ("late", (2,), "target of round 2"),
        ("other", (), "not a target"),
    ]
    approx = pytest.approx
    early, late, other = cycle["early"], cycle["late"], cycle["other"]
    assert _figures(_cell(rounds, early, cycle["t1"])) == (
        16,
        20,
        0.8,
        approx(0.5840, abs=5e-5),
        approx(0.9193, abs=5e-5),
    )
    assert _figures(_cell(rounds, late, cycle["t1"])) == (
        2,
        20,
        0.1,
        approx(0.0279, abs=5e-5),
        approx(0.3010, abs=5e-5),
    )
    assert _figures(_cell(rounds, other, cycle["t1"])) == (
        10,
        20,
        0.5,
        approx(0.2993, abs=5e-5),
        approx(0.7007, abs=5e-5),
    )
    assert _figures(_cell(rounds, early, cycle["t2"])) == (
        14,
        20,
        approx(0.7),
        approx(0.4810, abs=5e-5),
        approx(0.8545, abs=5e-5),
    )
    assert _figures(_cell(rounds, late, cycle["t2"])) == (
        8,
        20,
        0.4,
        approx(0.2188, abs=5e-5),
        approx(0.6134, abs=5e-5),
    )
    missing = _cell(rounds, other, cycle["t2"])
    assert (missing.measured, missing.missing, missing.rate_text) == (False, "not evaluated", "–")
    assert _cell(rounds, late, cycle["t2"]).rate_text == "40.0%"
    assert _cell(rounds, late, cycle["t2"]).interval_text == "21.9–61.3%"


def test_static_sets_give_error_rates_and_old_scores_are_not_counted(cycle, hate_task, owner):
    static = cycle_matrix(hate_task, owner).static
    assert [c.name for c in static.columns] == ["HateCheck", "HatemojiCheck"]
    assert [c.round for c in static.columns] == [None, None]
    approx = pytest.approx
    early, late = cycle["early"], cycle["late"]
    assert _figures(_cell(static, early, cycle["hatecheck"])) == (
        10,
        20,
        0.5,
        approx(0.2993, abs=5e-5),
        approx(0.7007, abs=5e-5),
    )
    old = _cell(static, late, cycle["hatecheck"])
    assert (old.measured, old.missing, old.n) == (False, "not counted", None)
    assert _figures(_cell(static, early, cycle["hatemoji"])) == (
        6,
        20,
        approx(0.3),
        approx(0.1455, abs=5e-5),
        approx(0.5190, abs=5e-5),
    )
    assert _figures(_cell(static, late, cycle["hatemoji"])) == (
        3,
        20,
        approx(0.15),
        approx(0.0524, abs=5e-5),
        approx(0.3604, abs=5e-5),
    )


def test_a_note_where_adjacent_targets_overlap_and_none_where_they_do_not(cycle, hate_task, owner):
    matrix = cycle_matrix(hate_task, owner)
    early, late = cycle["early"], cycle["late"]
    # Round 1: 80% [58.4, 91.9] against 10% [2.8, 30.1]: apart, so no note. Round 2: overlap.
    assert [(n.dataset_id, n.later, n.earlier) for n in matrix.rounds.notes] == [
        (cycle["t2"].pk, late.pk, early.pk)
    ]
    assert matrix.rounds.notes[0].text == (
        "Round 2 test: late (target of round 2) 40.0% [21.9%, 61.3%] against early (target of round 1) "
        "70.0% [48.1%, 85.5%]: inside the interval: not a measured difference."
    )
    # Static: HatemojiCheck overlaps; HateCheck has no figure for late, so nothing to compare.
    assert [(n.dataset_id, n.later) for n in matrix.static.notes] == [(cycle["hatemoji"].pk, late.pk)]
    assert INSIDE_THE_INTERVAL in matrix.static.notes[0].text


def test_rows_that_are_not_targets_are_never_compared():
    column = CycleColumn(1, "round-1-test", "Round 1 test", 1)
    same = CycleCell(fooled=8, n=20, rate=0.4, low=0.2188, high=0.6134)
    rows = [
        CycleRow(1, "a", (1,), [same]),
        CycleRow(2, "b", (), [same]),  # not a target: skipped
        CycleRow(3, "c", (2,), [same]),
    ]
    assert [(n.later, n.earlier) for n in interval_notes([column], rows)] == [(3, 1)]


def test_touching_intervals_overlap_and_unmeasured_cells_do_not():
    a = CycleCell(fooled=1, n=2, rate=0.5, low=0.1, high=0.3)
    b = CycleCell(fooled=1, n=2, rate=0.5, low=0.3, high=0.6)
    column = CycleColumn(1, "s", "S", 1)
    assert len(interval_notes([column], [CycleRow(1, "a", (1,), [a]), CycleRow(2, "b", (2,), [b])])) == 1
    gone = CycleCell(missing="not evaluated")
    assert interval_notes([column], [CycleRow(1, "a", (1,), [a]), CycleRow(2, "b", (2,), [gone])]) == []


def test_hidden_and_unpublished_things_are_left_out_for_anonymous_visitors(cycle, hate_task, client):
    from django.contrib.auth.models import AnonymousUser

    hidden_target = RegisteredModelFactory(task=hate_task, name="secret", is_published=False)
    set_round_targets(round=cycle["r2"], models=[cycle["late"], hidden_target])
    anonymous = cycle_matrix(hate_task, AnonymousUser())
    assert [r.name for r in anonymous.rounds.rows] == ["early", "late", "other"]
    assert "round-1-train" not in [c.slug for c in anonymous.rounds.columns]
    anonymous_model = RegisteredModelFactory(task=hate_task, name="shy", is_anonymous=True)
    _score(anonymous_model, cycle["t1"], {"accuracy": 1.0, "n": 20})
    names = [r.name for r in cycle_matrix(hate_task, AnonymousUser()).rounds.rows]
    assert names == ["early", "late", "Anonymous model 1", "other"]


def test_an_unready_model_that_is_not_a_target_is_left_out(cycle, hate_task, owner):
    failed = RegisteredModelFactory(task=hate_task, name="broken", status="failed")
    _score(failed, cycle["t1"], {"accuracy": 1.0, "n": 20})
    assert "broken" not in [r.name for r in cycle_matrix(hate_task, owner).rounds.rows]


def test_fooled_of_reads_the_count_else_accuracy_and_n():
    assert fooled_of({"fooled": 3, "n": 7, "accuracy": 0.0}) == (3, 7)
    assert fooled_of({"accuracy": 0.65, "n": 20}) == (7, 20)
    assert fooled_of({"f1": 0.5, "exact_match": 0.25, "n": 4}) is None  # an old QA score
    assert fooled_of({"accuracy": 0.5}) is None
    assert fooled_of({"accuracy": 0.5, "n": 0}) is None
    assert fooled_of({"fooled": 9, "n": 4}) is None  # no accuracy, and 9 of 4 is no count


def test_count_fooled_uses_the_tasks_model_wrong_rule(hate_task, qa_task):
    assert count_fooled(
        hate_task.cfg, ["hateful", "not-hateful", "hateful"], ["hateful", "hateful", "not-hateful"]
    ) == (2, "label differs")
    gold = {"answer": "Denver Broncos", "answer_start": 4}
    predicted = [
        "Broncos",  # P 1, R 1/2: F1 2/3, not fooled
        "in Santa Clara the Denver Broncos won the big game",  # 8 words, 2 shared: F1 2(1/4)(1)/(5/4) = 0.4, not below
        "the Denver Broncos beat the Carolina Panthers at Levi's Stadium in Santa Clara",  # F1 4/13: fooled
        "Panthers",  # F1 0: fooled
    ]
    assert count_fooled(qa_task.cfg, [gold] * 4, predicted) == (2, "F1 < 0.4")
    with pytest.raises(ValueError):
        count_fooled(hate_task.cfg, ["hateful"], [])


def test_the_evaluation_stores_the_count(tiny_registered_model, toy_dataset):
    from leaderboards.evaluation import evaluate_model_on_dataset

    evaluation = evaluate_model_on_dataset(tiny_registered_model, toy_dataset, passes=1)
    metrics = evaluation.metrics
    assert metrics["n"] == toy_dataset.items.count()
    assert metrics["fooled"] == round((1 - metrics["accuracy"]) * metrics["n"])
    assert metrics["fooled_rule"] == "label differs"


def test_a_qa_evaluation_counts_answers_below_the_f1_threshold(tiny_qa_registered_model, monkeypatch):
    from engine.runtime.qa_inference import SpanPredictor
    from leaderboards.evaluation import evaluate_model_on_dataset
    from leaderboards.models import Dataset, DatasetItem

    passage = "The Denver Broncos defeated the Carolina Panthers 24-10 at Levi's Stadium in Santa Clara."

    def reply(question: str) -> str:
        # "Who lost?" gets the winner: F1 0 against "Carolina Panthers". The robustness pass asks
        # perturbed questions ("Who WON?"), hence the lower case.
        return "Broncos" if "won" in question.lower() else "Denver Broncos"

    def fake_predict(self, texts, batch_size=16):
        return [{"answer": reply(q), "answer_start": passage.index(reply(q)), "score": 0.5} for _, q in texts]

    monkeypatch.setattr(SpanPredictor, "predict_batch", fake_predict)
    dataset = Dataset.objects.create(
        task=tiny_qa_registered_model.task, slug="qa-cycle", name="QA", kind="static", access="scoring"
    )
    for n, (question, answer, start) in enumerate(
        [("Who won?", "Denver Broncos", 4), ("Who lost?", "Carolina Panthers", 32)]
    ):
        DatasetItem.objects.create(
            dataset=dataset,
            external_id=f"q{n}",
            inputs={"context": passage, "question": question},
            target={"answer": answer, "answer_start": start},
        )
    metrics = evaluate_model_on_dataset(tiny_qa_registered_model, dataset, passes=1).metrics
    assert (metrics["fooled"], metrics["n"], metrics["fooled_rule"]) == (1, 2, "F1 < 0.4")


def test_the_task_page_shows_the_matrix_and_its_notes(cycle, client):
    html = client.get("/tasks/hate-speech/").content.decode()
    assert "The cycle across rounds" in html
    assert '<table class="cycle-matrix cycle-rounds">' in html
    assert '<table class="cycle-matrix cycle-static">' in html
    assert '<strong>80.0%</strong><br><span class="muted">16 of 20<br>[58.4–91.9%]</span>' in html
    assert '<strong>40.0%</strong><br><span class="muted">8 of 20<br>[21.9–61.3%]</span>' in html
    assert "target of round 1" in html and "not a target" in html
    assert html.count(INSIDE_THE_INTERVAL + ".</li>") == 2  # round 2 test, HatemojiCheck
    assert "not counted" in html and "not evaluated" in html


def test_the_task_page_says_so_when_there_is_nothing_yet(hate_round, client):
    html = client.get("/tasks/hate-speech/").content.decode()
    assert "The cycle across rounds" in html
    assert "No round has validated test examples yet" in html
    assert "cycle-matrix" not in html


def test_a_red_teaming_task_page_has_no_matrix(client):
    import copy

    from django.contrib.auth.models import AnonymousUser

    from tasks.builtin_configs import RED_TEAM_CONFIG
    from tasks.models import Task
    from tests.factories.tasks import open_round

    task = Task.objects.create(slug="red-team", name="Red-team", config=copy.deepcopy(RED_TEAM_CONFIG))
    round_ = open_round(task)
    DatasetFactory(task=task, slug="round-1-test", round=round_, kind="round", split="test")
    matrix = cycle_matrix(task, AnonymousUser())
    assert (matrix.rounds.columns, matrix.static.columns) == ([], [])
    assert "The cycle across rounds" not in client.get("/tasks/red-team/").content.decode()


def test_sections_register_once_and_a_none_shows_nothing(hate_task, rf):
    from django.contrib.auth.models import AnonymousUser

    calls = []

    def provider(request, task):
        calls.append(task.slug)
        return None

    page_sections.register(provider)
    page_sections.register(provider)
    try:
        request = rf.get("/")
        request.user = AnonymousUser()
        sections = page_sections.sections_for(request, hate_task)
        # leaderboards' cycle matrix (registered in its AppConfig.ready) and nothing for the None
        assert [s.template for s in sections] == ["cycle/_cycle_matrix.html"]
        assert calls == ["hate-speech"]
    finally:
        page_sections.unregister(provider)
    assert provider not in page_sections._providers


def test_the_api_gives_the_same_matrix(cycle, api):
    response = api(None).get("/api/tasks/hate-speech/cycle/")
    assert response.status_code == 200
    body = response.json()
    assert body["task"] == "hate-speech"
    assert body["rule"] == "a predicted label that differs from the validated label"
    rounds = body["rounds"]
    assert [c["slug"] for c in rounds["columns"]] == ["round-1-test", "round-2-test"]
    assert [(r["name"], r["target_of"]) for r in rounds["rows"]] == [
        ("early", [1]),
        ("late", [2]),
        ("other", []),
    ]
    late = rounds["rows"][1]["cells"][1]
    assert (late["fooled"], late["n"], late["rate"], late["missing"]) == (8, 20, 0.4, "")
    assert late["low"] == pytest.approx(0.2188, abs=5e-5) and late["high"] == pytest.approx(0.6134, abs=5e-5)
    assert rounds["rows"][2]["cells"][1] == {
        "fooled": None,
        "n": None,
        "rate": None,
        "low": None,
        "high": None,
        "missing": "not evaluated",
    }
    assert [n["later"] for n in rounds["notes"]] == [cycle["late"].pk]
    assert [c["name"] for c in body["static"]["columns"]] == ["HateCheck", "HatemojiCheck"]
    assert len(body["static"]["notes"]) == 1


def test_the_api_answers_404_for_an_unknown_task(api, db):
    assert api(None).get("/api/tasks/no-such-task/cycle/").status_code == 404


def test_adjacent_targets_on_the_same_items_are_compared_by_mcnemars_test(cycle, hate_task, client):
    """On round 2's test set (items 1-20 by id here), early got 14 wrong and late 8, as in the world:
    early's are 1-14 and late's 9-16, so only early: 1-8 (8 items), only late: 15, 16 (2). McNemar's
    exact test: d = 10, P(X <= 2) = (1 + 10 + 45) / 1024, doubled: 112 / 1024 = 0.109: no measured
    difference, though 70% against 40%. With late wrong on 13-14 only instead (2 items, only early
    12, only late 0): p = 2 / 4096 = 0.00049, they differ."""
    from django.contrib.auth.models import AnonymousUser

    from leaderboards.evaluation import items_digest

    digest = items_digest(list(range(1, 21)))
    early_ids, late_ids = list(range(1, 15)), list(range(9, 17))
    for model, ids in ((cycle["early"], early_ids), (cycle["late"], late_ids)):
        score = model.scores.get(dataset=cycle["t2"])
        score.metrics = {"n": 20, "fooled": len(ids), "fooled_items": ids, "items_digest": digest}
        score.save()
    [note] = [
        n for n in cycle_matrix(hate_task, AnonymousUser()).rounds.notes if n.dataset_id == cycle["t2"].pk
    ]
    assert (note.only_later, note.only_earlier, note.p_value, note.differs) == (2, 8, 112 / 1024, False)
    assert "no measured difference (McNemar's exact test on the 20 items both answered: 2 wrong for late" in (
        note.text
    )
    assert note.text.endswith("p = 0.109).")

    score = cycle["late"].scores.get(dataset=cycle["t2"])
    score.metrics = {"n": 20, "fooled": 2, "fooled_items": [13, 14], "items_digest": digest}
    score.save()
    [note] = [
        n for n in cycle_matrix(hate_task, AnonymousUser()).rounds.notes if n.dataset_id == cycle["t2"].pk
    ]
    assert (note.only_later, note.only_earlier, note.differs) == (0, 12, True)
    assert note.p_value == 2 / 4096 and note.text.endswith("p < 0.001).")

    # Scored on other items (another digest): no paired test; the intervals do not overlap, no note.
    score.metrics = {**score.metrics, "items_digest": "0" * 16}
    score.save()
    notes = cycle_matrix(hate_task, AnonymousUser()).rounds.notes
    assert not [n for n in notes if n.dataset_id == cycle["t2"].pk]


def test_an_evaluation_records_which_items_were_wrong(hate_task):
    from leaderboards.evaluation import _fooled_metrics, items_digest

    got = _fooled_metrics(hate_task.cfg, [5, 7, 9], ["hateful", "nothate", "hateful"], ["hateful"] * 3)
    assert got == {
        "fooled": 1,
        "fooled_rule": "label differs",
        "fooled_items": [7],
        "items_digest": items_digest([5, 7, 9]),
    }
    # sha256 of "5,7,9", its first 16 hex digits.
    import hashlib

    assert items_digest([5, 7, 9]) == hashlib.sha256(b"5,7,9").hexdigest()[:16]
