"""Annotator leaderboards: values by hand, ranking (verified model-fooling, then vMER; a competition
round's final table by vMER), pseudonyms versus opted-in display names, the page, the API and the
profile form that sets the name."""

from __future__ import annotations

import pytest

from leaderboards.annotators.board import annotator_board, annotator_pseudonym
from tasks.services import ensure_round
from tests.factories.accounts import UserFactory
from tests.factories.annotation import make_example
from tests.helpers.api import client_for

pytestmark = pytest.mark.django_db


def _write(round_, who, n=1, **fields):
    for _ in range(n):
        make_example(round_, who, **fields)


@pytest.fixture
def people(hate_round):
    """p (opted in as "Zoë ✨"), q and r in round 1:

    p: 2 fooling validated correct, 1 fooling validated incorrect, 1 not fooling pending, and a retracted
       verified one (out): collected 4, scored 4, verified 2, vMER 1/2, rejected 1, flagged 0
    q: 2 fooling validated correct, 1 unscored, 1 fooling settled flagged, and an imported verified one
       (out): collected 4, scored 3, verified 2, vMER 2/3, rejected 0, flagged 1
    r: 1 fooling validated correct, 1 pending flagged by its author: collected 2, scored 2, verified 1,
       vMER 1/2, flagged 1
    """
    p = UserFactory(username="p", display_name="Zoë ✨", show_display_name=True)
    q = UserFactory(username="q")
    r = UserFactory(username="r", display_name="Hidden Name", show_display_name=False)
    _write(hate_round, p, 2, status="validated_correct")
    _write(hate_round, p, 1, status="validated_incorrect")
    _write(hate_round, p, 1, model_wrong=False)
    _write(hate_round, p, 1, status="validated_correct", is_retracted=True)
    _write(hate_round, q, 2, status="validated_correct")
    _write(hate_round, q, 1, model_wrong=None, prediction_status="failed")
    _write(hate_round, q, 1, status="flagged")
    _write(hate_round, q, 1, status="validated_correct", source="imported")
    _write(hate_round, r, 1, status="validated_correct")
    _write(hate_round, r, 1, is_flagged_by_annotator=True)
    return p, q, r


def test_values_and_order_by_hand(hate_task, people):
    p, q, r = people
    board = annotator_board(hate_task, hate_task.current_round)
    rows = [
        (x.rank, x.name, x.collected, x.scored, x.verified, x.vmer, x.rejected, x.flagged) for x in board.rows
    ]
    assert rows == [
        (1, annotator_pseudonym(hate_task.pk, q.pk), 4, 3, 2, 2 / 3, 0, 1),
        (2, "Zoë ✨", 4, 4, 2, 0.5, 1, 0),
        (3, annotator_pseudonym(hate_task.pk, r.pk), 2, 2, 1, 0.5, 0, 1),
    ]
    assert [x.is_pseudonym for x in board.rows] == [True, False, True]
    assert not board.is_final_table and board.title == "Annotators · round 1"


def test_the_task_board_adds_up_every_round(hate_task, hate_round, people):
    p, q, _ = people
    round_2 = ensure_round(task=hate_task, number=2)
    _write(round_2, p, 2, status="validated_correct")
    board = annotator_board(hate_task)
    assert [(x.name, x.verified, x.collected) for x in board.rows[:2]] == [
        ("Zoë ✨", 4, 6),
        (annotator_pseudonym(hate_task.pk, q.pk), 2, 4),
    ]
    assert board.title == "Annotators · all rounds"


def test_equal_keys_share_a_rank(hate_task, hate_round):
    a, b, c = UserFactory(), UserFactory(), UserFactory()
    for who in (a, b):
        _write(hate_round, who, 1, status="validated_correct")
    _write(hate_round, c, 1)
    assert [x.rank for x in annotator_board(hate_task, hate_round).rows] == [1, 1, 3]


def test_the_pseudonym_is_stable_per_task_and_keyed(settings, hate_task):
    one = annotator_pseudonym(hate_task.pk, 7)
    assert one == annotator_pseudonym(hate_task.pk, 7) and one.startswith("anon-") and len(one) == 21
    assert one != annotator_pseudonym(hate_task.pk + 1, 7)
    assert one != annotator_pseudonym(hate_task.pk, 7, key="another key")


def test_a_competition_round_is_a_final_table_ranked_by_vmer(hate_task):
    contest = ensure_round(task=hate_task, number=2)
    contest.is_competition, contest.examples_per_participant = True, 4
    contest.save()
    s, t, u = UserFactory(username="s"), UserFactory(username="t"), UserFactory(username="u")
    _write(contest, s, 1, status="validated_correct")
    _write(contest, s, 2)  # s: verified 1 of 3 scored, vMER 1/3
    _write(contest, t, 1, status="validated_correct")  # t: 1 of 1, vMER 1
    _write(contest, u, 2, status="validated_correct")
    _write(contest, u, 2)  # u: 2 of 4, vMER 1/2 (first by verified fooling on an ordinary board)
    board = annotator_board(hate_task, contest)
    name = {x.pk: annotator_pseudonym(hate_task.pk, x.pk) for x in (s, t, u)}
    assert [(x.rank, x.name, x.vmer) for x in board.rows] == [
        (1, name[t.pk], 1.0),
        (2, name[u.pk], 0.5),
        (3, name[s.pk], 1 / 3),
    ]
    assert (board.is_final_table, board.quota, board.title) == (True, 4, "Final table · round 2")
    assert [x.name for x in annotator_board(hate_task).rows] == [name[u.pk], name[t.pk], name[s.pk]]


def test_the_page(client, hate_task, people):
    page = client.get("/tasks/hate-speech/annotators/?round=1")
    assert page.status_code == 200
    text = page.content.decode()
    assert text.index(annotator_pseudonym(hate_task.pk, people[1].pk)) < text.index("Zoë ✨")
    assert "Hidden Name" not in text and ">q<" not in text
    assert client.get("/tasks/hate-speech/annotators/").status_code == 200
    assert client.get("/tasks/hate-speech/annotators/?round=9").status_code == 404
    assert client.get("/tasks/hate-speech/annotators/?round=x").status_code == 404
    assert "/tasks/hate-speech/annotators/" in client.get("/tasks/hate-speech/").content.decode()


def test_the_api_is_public_and_paginated(hate_task, people):
    client = client_for(None)
    body = client.get("/api/tasks/hate-speech/annotators/?round=1&page_size=2").json()
    assert (body["count"], len(body["results"]), body["round"], body["is_final_table"]) == (3, 2, 1, False)
    first = body["results"][0]
    assert first == {
        "rank": 1,
        "name": annotator_pseudonym(hate_task.pk, people[1].pk),
        "is_pseudonym": True,
        "collected": 4,
        "scored": 3,
        "verified": 2,
        "vmer": pytest.approx(2 / 3),
        "rejected": 0,
        "flagged": 1,
    }
    assert body["next"] is not None
    everything = client.get("/api/tasks/hate-speech/annotators/").json()
    assert everything["round"] is None and everything["count"] == 3
    for bad in ("x", "0", "9", ""):
        response = client.get(f"/api/tasks/hate-speech/annotators/?round={bad}")
        assert response.status_code == 400 and "round" in response.json(), bad


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"display_name": "bell \u0007"}, "control character"),
        ({"display_name": "x" * 61}, "at most 60"),
        ({"display_name": "anon-0123456789abcdef"}, "pseudonyms"),
        ({"display_name": "", "show_display_name": "on"}, "Give a display name"),
        ({"display_name": "a\u202eb"}, "U+202E"),
    ],
)
def test_the_profile_form_refuses_bad_names(client, annotator, password, data, message):
    client.login(username="annotator", password=password)
    response = client.post("/me/", {"action": "display_name", **data})
    assert response.status_code == 400
    assert message in response.content.decode()
    annotator.refresh_from_db()
    assert (annotator.display_name, annotator.show_display_name) == ("", False)


def test_the_profile_form_opts_in(client, hate_task, hate_round, annotator, password):
    _write(hate_round, annotator, 1, status="validated_correct")
    client.login(username="annotator", password=password)
    assert "display-name" in client.get("/me/").content.decode()
    response = client.post(
        "/me/", {"action": "display_name", "display_name": "  مريم  ", "show_display_name": "on"}
    )
    assert response.status_code == 302
    annotator.refresh_from_db()
    assert (annotator.display_name, annotator.show_display_name) == ("مريم", True)
    assert annotator_board(hate_task).rows[0].name == "مريم"
    client.post(
        "/me/", {"action": "display_name", "display_name": "مريم"}
    )  # box unticked: back to a pseudonym
    assert annotator_board(hate_task).rows[0].name == annotator_pseudonym(hate_task.pk, annotator.pk)
