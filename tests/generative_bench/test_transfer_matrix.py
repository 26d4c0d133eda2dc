"""The transfer matrix (generative_bench/transfer/): each model on each round's conversations, people's
verdicts where they judged, the trusted judge corrected for its errors elsewhere, with intervals; the
page and the API."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser

from annotation.models import Example
from generative_bench.transfer.selectors import JUDGE, PEOPLE, transfer_matrix
from models_registry.models import RoundTarget
from tests.generative_bench.judge_world import (
    URL,
    VC,
    VI,
    chat_model,
    conversation,
    judge_of,
    red_team_task,
    replay_of,
    replayed,
    verdict,
)
from tests.helpers.api import client_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(annotator, django_user_model):
    """Round 1, target T: 24 conversations people settled, judged by the judge with (people, judge)
    failed (T, T) 8, (T, F) 2, (F, T) 2, (F, F) 12: Se 0.8, Sp 6/7, kappa 0.657 (trusted at its floor 0.4).
    Model A replayed on 5 of them, its answers rated by people: 2 failed (settled incorrect) of 5.
    Model B replayed on 10 of them, not rated, the judge saying 4 failed: Rogan-Gladen
    (0.4 + 6/7 - 1) / (0.8 + 6/7 - 1) = 9/23. Model C never replayed."""
    task = red_team_task()
    r1 = task.rounds.get(number=1)
    target, a, b, c = (chat_model(task, name, URL) for name in ("T", "A", "B", "C"))
    RoundTarget.objects.create(round=r1, model=target)
    judge = judge_of(task, chat_model(task, "judge-model", URL))
    authors = [django_user_model.objects.create_user(username=f"author{i}", password="x") for i in range(6)]
    held = []
    k = 0
    for people, judged, count in ((True, True, 8), (True, False, 2), (False, True, 2), (False, False, 12)):
        for _ in range(count):
            example = conversation(r1, authors[k % 6], target, failed=people, status=VC)
            verdict(judge, example, judged)
            held.append(example)
            k += 1
    replay_a, replay_b = replay_of(r1, a), replay_of(r1, b)
    for i, example in enumerate(held[:5]):
        replayed(replay_a, example, f"A{i}", rating_status=VI if i < 2 else VC)
    for i, example in enumerate(held[:10]):
        verdict(judge, replayed(replay_b, example, f"B{i}"), i < 4)
    return {"task": task, "target": target, "a": a, "b": b, "c": c, "judge": judge, "round": r1}


def test_cells_come_from_people_else_the_corrected_judge(world):
    matrix = transfer_matrix(world["task"], AnonymousUser())
    assert matrix.rounds == [1] and matrix.judge == "Judge"
    rows = {row.name: row for row in matrix.rows}
    assert [row.name for row in matrix.rows] == ["T", "A", "B", "C", "judge-model"]  # the target first
    [target] = rows["T"].cells
    # The round's attack success rate: 10 verified failures of 24 conversations, by 6 people.
    assert (target.source, target.rate, target.n, target.people) == (PEOPLE, 10 / 24, 24, 6)
    assert target.interval[0] < 10 / 24 < target.interval[1]
    [a] = rows["A"].cells
    assert (a.source, a.rate, a.n) == (PEOPLE, 2 / 5, 5)
    # Its 5 answers replay the conversations of 5 different authors: an interval across them.
    assert a.people == 5 and a.interval[0] <= 0.4 <= a.interval[1] and a.note == ""
    [b] = rows["B"].cells
    assert (b.source, b.n) == (JUDGE, 10) and b.rate == pytest.approx(9 / 23)
    assert b.interval[0] < 9 / 23 < b.interval[1]
    [c] = rows["C"].cells
    assert (c.rate, c.note) == (None, "not replayed or not judged")


def test_the_page_and_the_api(world, client):
    html = client.get("/tasks/red-team/transfer/").content.decode()
    assert "Transfer matrix" in html and "corrected judge, 10 answers" in html and "39%" in html
    body = client_for(None).get("/api/tasks/red-team/transfer/").json()
    assert body["rounds"] == [1] and body["judge"] == "Judge"
    b = next(row for row in body["rows"] if row["name"] == "B")["cells"][0]
    assert b["source"] == "corrected judge" and b["rate"] == pytest.approx(9 / 23)
    assert client_for(None).get("/api/tasks/no-such/transfer/").status_code == 404


def test_without_a_trusted_judge_the_unjudged_cells_say_so(world):
    world["judge"].agreement_floor = 0.99
    world["judge"].save()
    matrix = transfer_matrix(world["task"], AnonymousUser())
    [b] = next(row for row in matrix.rows if row.name == "B").cells
    assert (b.rate, b.note) == (None, "people did not judge these answers, and no judge is trusted")
    assert matrix.judge is None
    assert Example.objects.filter(round=world["round"]).count() == 24 + 5  # the rating examples of A
