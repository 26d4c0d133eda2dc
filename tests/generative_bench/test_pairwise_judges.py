"""Pairwise judges (generative_bench/pairwise/): made and run as an owner, each battle voted in both
orders, a position-biased judge's flips counted as ties, its figures against people's votes on the arena
ranking page and in the API; on the real SmolLM2, one battle voted in both orders."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from generative_bench.jobs import run_pairwise_judge_job
from generative_bench.judges.services import JudgeError
from generative_bench.models import Battle, PairwiseVerdict
from generative_bench.pairwise import jobs
from generative_bench.pairwise.services import create_pairwise_judge, run_pairwise_judge
from tests.factories.red_team import make_red_team_round
from tests.generative_bench.judge_world import (
    URL,
    VC,
    VI,
    chat_model,
    conversation,
    passage,
    red_team_task,
    replay_of,
    replayed,
)
from tests.helpers.api import client_for

pytestmark = pytest.mark.django_db


def battle(task, voter, a, b, vote, answer_a="Brazil.", answer_b="Peru."):
    return Battle.objects.create(
        task=task, voter=voter, model_a=a, model_b=b, answer_a=answer_a, answer_b=answer_b,
        messages=[{"role": "system", "content": "Passage: The Amazon flows through Brazil."},
                  {"role": "user", "content": "Where does the Amazon flow?"}],
        status=Battle.Status.VOTED if vote else Battle.Status.READY, vote=vote or "",
    )  # fmt: skip


@pytest.fixture
def arena(annotator, owner):
    """Models x, y, z; people: x beats y (battles 1, 2), y beats z (3, 4), x beats z (5); battle 6 not voted."""
    task = red_team_task()
    task.owners.add(owner)
    x, y, z = (chat_model(task, name, URL) for name in ("x", "y", "z"))
    judge_model = chat_model(task, "judge-model", URL)
    battles = [
        battle(task, annotator, x, y, "a"),
        battle(task, annotator, x, y, "a"),
        battle(task, annotator, y, z, "a"),
        battle(task, annotator, y, z, "a"),
        battle(task, annotator, x, z, "a"),
        battle(task, annotator, x, z, None),
    ]
    return SimpleNamespace(task=task, judge_model=judge_model, battles=battles, owner=owner)


def stand_in(monkeypatch, pick):
    """``choose`` replaced: ``pick(battle, order_shown_first_answer)`` gives the index of "1", "2", "tie"."""

    def choose(model, messages, options):
        text = messages[0]["content"]
        first = text.split("Answer 1:\n<<<\n", 1)[1].split("\n>>>", 1)[0]
        return SimpleNamespace(picked=pick(first), normalised=[0.0, 0.0, 0.0])

    monkeypatch.setattr(jobs, "choose", choose)


def test_a_judge_that_prefers_the_first_answer_flips_on_every_battle(arena, monkeypatch):
    judge = create_pairwise_judge(task=arena.task, model=arena.judge_model, name="first-biased")
    stand_in(monkeypatch, lambda first: 0)  # always "answer 1"
    assert run_pairwise_judge_job(judge.pk) == "done"
    verdicts = PairwiseVerdict.objects.filter(judge=judge)
    assert verdicts.count() == 12  # 6 battles x 2 orders, the unvoted one too
    # Shown a first it says a; shown b first it says b (mapped back): every battle a flip.
    assert set(verdicts.filter(order="ab").values_list("preferred", flat=True)) == {"a"}
    assert set(verdicts.filter(order="ba").values_list("preferred", flat=True)) == {"b"}
    body = client_for(None).get("/api/tasks/red-team/pairwise-judges/").json()
    [figures] = body
    assert (figures["judged_both_orders"], figures["flips"], figures["flip_rate"]) == (6, 6, 1.0)
    # Its vote is a tie on all 5 battles people voted "a": agreement 0.
    assert (figures["compared_with_people"], figures["agreeing"], figures["agreement"]) == (5, 0, 0.0)
    # A second run has nothing left to vote.
    judge.refresh_from_db()
    assert run_pairwise_judge_job(judge.pk) == "done"
    judge.refresh_from_db()
    assert (
        judge.progress == "Nothing new to vote." and PairwiseVerdict.objects.filter(judge=judge).count() == 12
    )


def test_a_judge_that_reads_the_answers_agrees_and_ranks_as_people(arena, client, monkeypatch):
    judge = create_pairwise_judge(task=arena.task, model=arena.judge_model, name="fair")
    # It prefers "Brazil." wherever it is shown: model a's answer in every battle, as people did.
    stand_in(monkeypatch, lambda first: 0 if first == "Brazil." else 1)
    run_pairwise_judge_job(judge.pk)
    [figures] = client_for(None).get("/api/tasks/red-team/pairwise-judges/").json()
    assert (figures["flips"], figures["agreement"], figures["rank_correlation"]) == (0, 1.0, 1.0)
    assert figures["agreement_interval"][0] < 1.0 == figures["agreement_interval"][1]
    html = client.get("/tasks/red-team/arena/ranking/").content.decode()
    assert "Pairwise judges" in html and "5 of 5 battles" in html


def test_making_and_running_one_is_checked(arena, annotator):
    with pytest.raises(JudgeError, match="name"):
        create_pairwise_judge(task=arena.task, model=arena.judge_model, name="  ")
    judge = create_pairwise_judge(task=arena.task, model=arena.judge_model, name="j")
    with pytest.raises(JudgeError) as taken:
        create_pairwise_judge(task=arena.task, model=arena.judge_model, name="j")
    assert taken.value.code == "name_taken"
    with pytest.raises(JudgeError) as not_owner:
        run_pairwise_judge(judge=judge, user=annotator)
    assert not_owner.value.code == "not_owner"
    run_pairwise_judge(judge=judge, user=arena.owner)
    with pytest.raises(JudgeError) as busy:  # a double click
        run_pairwise_judge(judge=judge, user=arena.owner)
    assert busy.value.code == "busy"


def test_smollm2_votes_a_battle_in_both_orders(smollm2_dir, annotator):
    round_ = make_red_team_round(smollm2_dir)
    target = round_.targets.get().model
    other = chat_model(round_.task, "other", URL)
    one = battle(round_.task, annotator, target, other, "a", answer_a="It flows through Brazil.",
                 answer_b="It flows through the Sahara desert.")  # fmt: skip
    judge = create_pairwise_judge(task=round_.task, model=target, name="smol-judge")
    assert run_pairwise_judge_job(judge.pk) == "done"
    got = dict(PairwiseVerdict.objects.filter(judge=judge, battle=one).values_list("order", "preferred"))
    assert set(got) == {"ab", "ba"} and set(got.values()) <= {"a", "b", "tie"}
    assert all(len(v.scores) == 3 for v in PairwiseVerdict.objects.filter(judge=judge))


def test_an_owner_adds_and_runs_one_in_the_admin(arena, client, django_capture_on_commit_callbacks):
    """The add form offers the owner's red-teaming tasks and their ready generative models (the mixin the
    rubric judges' admin shares); the action queues a run once."""
    from generative_bench.models import PairwiseJudge

    client.force_login(arena.owner)
    form = client.get("/admin/generative_bench/pairwisejudge/add/")
    assert form.status_code == 200
    html = form.content.decode()
    assert f'value="{arena.judge_model.pk}"' in html and f'value="{arena.task.pk}"' in html
    response = client.post(
        "/admin/generative_bench/pairwisejudge/add/",
        {"task": arena.task.pk, "model": arena.judge_model.pk, "name": "from-admin", "is_active": "on"},
    )
    assert response.status_code == 302, response.content.decode()[:1000]
    judge = PairwiseJudge.objects.get(name="from-admin")
    with django_capture_on_commit_callbacks(execute=False) as queued:
        client.post(
            "/admin/generative_bench/pairwisejudge/",
            {"action": "run_pairwise_action", "_selected_action": [judge.pk]},
        )
    judge.refresh_from_db()
    assert (judge.status, len(queued)) == ("queued", 1)


def test_replay_pairs_are_voted_in_both_orders_and_compared_with_peoples_ratings(
    annotator, owner, monkeypatch
):
    """Models x and y replay three conversations (keep), people rated: 1: x good, y failed (people prefer
    x: "a"); 2: both good ("tie"); 3: x failed, y unrated (not compared). The judge picks "Brazil."
    when it is shown first, else the second answer. Pair 1 (x Brazil., y Peru.): a in both orders.
    Pair 2 (both Brazil.): the first shown both times, a then b mapped back: a flip, a tie. Pair 3: a.
    So 1 flip in 3 pairs; 2 compared with people, both agreeing (a = a, tie = tie)."""
    task = red_team_task()
    task.owners.add(owner)
    round_ = task.current_round
    x, y = chat_model(task, "x", URL), chat_model(task, "y", URL)
    context = passage(round_)
    examples = [conversation(round_, annotator, x, failed=True, status=VC, context=context) for _ in range(3)]
    rx, ry = replay_of(round_, x), replay_of(round_, y)
    replayed(rx, examples[0], "Brazil.", rating_status=VC)
    replayed(ry, examples[0], "Peru.", rating_status=VI)
    replayed(rx, examples[1], "Brazil.", rating_status=VC)
    replayed(ry, examples[1], "Brazil.", rating_status=VC)
    replayed(rx, examples[2], "Brazil.", rating_status=VI)
    replayed(ry, examples[2], "Peru.")
    judge = create_pairwise_judge(task=task, model=chat_model(task, "judge-model", URL), name="fair")
    stand_in(monkeypatch, lambda first: 0 if first == "Brazil." else 1)
    assert run_pairwise_judge_job(judge.pk) == "done"
    verdicts = PairwiseVerdict.objects.filter(judge=judge)
    assert verdicts.count() == 6 and not verdicts.filter(battle__isnull=False).exists()
    [figures] = client_for(None).get("/api/tasks/red-team/pairwise-judges/").json()
    assert figures["judged_both_orders"] == 0  # no arena battle
    pairs = figures["replay_pairs"]
    assert (pairs["judged_both_orders"], pairs["flips"]) == (3, 1)
    assert (pairs["compared_with_people"], pairs["agreeing"], pairs["agreement"]) == (2, 2, 1.0)
    # A second run has nothing left to vote.
    assert run_pairwise_judge_job(judge.pk) == "done" and verdicts.count() == 6


def test_people_preference_between_two_rated_answers():
    from generative_bench.pairwise.selectors import people_preference

    assert people_preference(False, True) == "a"
    assert people_preference(True, False) == "b"
    assert people_preference(True, True) == people_preference(False, False) == "tie"
    assert people_preference(None, False) is None and people_preference(True, None) is None
