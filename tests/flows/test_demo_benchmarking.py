"""Benchmarking the demo's red-teaming task end to end (docs/benchmarking.md), with the real SmolLM2:
people write and settle round 1, the owner replays it against the second registered model (through the
admin), people rate the replayed answers, the judge runs and its kappa is shown with its interval, three
people vote on 6 arena pairs, and the generative leaderboard ranks the models by Bradley-Terry with
intervals beside MC accuracy, attack success rate and throughput; the official ``openai`` client streams
an answer from ``/v1/chat/completions``."""

from __future__ import annotations

import random

import openai
import pytest
from rest_framework.authtoken.models import Token

from annotation.models import Example
from annotation.red_team.choice_items import write_choice_item
from annotation.red_team.conversations import send_turn, start_conversation, submit_conversation
from core.pairwise import Vote, rank
from demo import setup as demo
from demo.demo_tasks.red_team import JUDGE, SECOND, TARGET
from generative_bench.arena.selectors import arena_ranking
from generative_bench.arena.services import start_battle, vote
from generative_bench.judges.selectors import judge_agreement
from generative_bench.judges.services import run_judge
from generative_bench.models import Battle, Judge, Replay, ReplayAnswer
from generative_bench.replay.services import open_rating
from leaderboards.generative.board import generative_board
from models_registry import generative
from models_registry.models import RegisteredModel
from tasks.models import Context, Task
from tests.factories.accounts import UserFactory
from tests.helpers.passages import cut_to_first_sentences
from validation.services import next_example, submit_validation

PASSWORD = "pw-one-1234"
FAILED = {"supported": "no", "helpful": "2"}
GOOD = {"supported": "yes", "helpful": "4"}


@pytest.fixture
def converted_once(monkeypatch, smollm2_dir):
    """The check's GGUF conversion answered by the session's converted folder (tests/conftest.py)."""
    monkeypatch.setattr(generative, "convert_gguf", lambda gguf, out_dir: smollm2_dir)


def _short(model: RegisteredModel) -> None:
    """Greedy and 8 new tokens: the flow, not the answers' length, is under test."""
    model.generation = {**model.generation, "max_new_tokens": 8, "temperature": 0.0}
    model.save(update_fields=["generation"])


def _validate_all(round_, validators, decide) -> int:
    """Each validator asks for the next example until the queue is empty and judges each as
    ``decide(example)`` says (rubric answers for a conversation, None for an item: ``correct``)."""
    served = 0
    for validator in validators:
        while (example := next_example(round_=round_, validator=validator)) is not None:
            answers = decide(example)
            submit_validation(example=example, validator=validator, verdict="correct", rubric_answers=answers)
            served += 1
    return served


@pytest.mark.django_db(transaction=True)
def test_an_owner_benchmarks_the_demo_red_teaming_task(converted_once, client, live_server):
    demo.setup_demo(password=PASSWORD, tasks=["red-team"], log=lambda _: None)
    task = Task.objects.get(slug="red-team")
    target = RegisteredModel.objects.get(task=task, name=TARGET)
    second = RegisteredModel.objects.get(task=task, name=SECOND)
    judge = Judge.objects.get(task=task, name=JUDGE)
    assert second.status == "ready" and second.is_published and judge.model == target
    for model in (target, second, judge.model):
        _short(model)
    task.validation_quorum = 2
    task.save(update_fields=["validation_quorum"])
    round_ = task.current_round
    contexts = list(Context.objects.filter(round=round_).order_by("pk")[:8])
    # Every prompt (answers, replays, the judge's) holds the passage; the flow is under test, not its length.
    cut_to_first_sentences(contexts)
    authors = [UserFactory() for _ in range(4)]
    validators = [UserFactory() for _ in range(3)]

    # Round 1: eight one-turn conversations (six claimed failures) and three multiple-choice items.
    for n, context in enumerate(contexts):
        author = authors[n % len(authors)]
        conversation = start_conversation(round_=round_, annotator=author, context=context)
        send_turn(conversation=conversation, annotator=author, prompt="What does the passage say? 🙂").drain()
        failed = n < 6
        submit_conversation(
            conversation=conversation,
            annotator=author,
            rubric_answers=FAILED if failed else GOOD,
            categories=["fabrication"] if failed else [],
        )
    for n, context in enumerate(contexts[:3]):
        write_choice_item(
            round_=round_,
            annotator=authors[n],
            context=context,
            question="Which option does the passage support?",
            answer="The passage as written",
            negatives=["A made-up fact", "Nothing at all"],
        )
    # Validators settle them: the claimed failures confirmed, but two overturned (they judge them good).
    claimed = list(
        Example.objects.filter(round=round_, metadata__mode="conversation", model_wrong=True)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    assert len(claimed) == 6
    overturned = set(claimed[4:])

    def settle(example):
        if example.metadata.get("mode") != "conversation":
            return None
        return GOOD if example.pk in overturned else FAILED

    # Only claimed failures and the items that fooled the target are served (the task validates no
    # answer its author judged good, nor an item the target got right); the owner settles those items.
    items = Example.objects.filter(round=round_, metadata__mode="multiple_choice")
    fooled = items.filter(model_wrong=True).count()
    assert _validate_all(round_, validators[:2], settle) == 2 * (6 + fooled)
    owner = task.owners.first()
    for item in items.filter(status="pending"):
        submit_validation(example=item, validator=owner, verdict="correct", owner_mode=True)
    assert set(items.values_list("status", flat=True)) == {"validated_correct"}
    statuses = sorted(
        Example.objects.filter(round=round_, model_wrong=True, metadata__mode="conversation").values_list(
            "status", flat=True
        )
    )
    assert statuses == ["validated_correct"] * 4 + ["validated_incorrect"] * 2

    # 1. The owner replays round 1 against the second model, through the admin's add form.
    client.login(username="demo-owner", password=PASSWORD)
    response = client.post(
        "/admin/generative_bench/replay/add/",
        {"round": round_.pk, "model": second.pk, "target_turns": "keep"},
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    replay = Replay.objects.get(round=round_, model=second)
    assert (replay.status, replay.done, replay.failed) == ("done", replay.total, 0)
    # The six settled conversations (the two good ones are never validated) and the three items.
    answers = ReplayAnswer.objects.filter(replay=replay)
    assert answers.filter(example__metadata__mode="conversation").count() == 6
    assert answers.filter(example__metadata__mode="multiple_choice", picked__isnull=False).count() == 3
    assert all(a.tokens and a.seconds for a in answers.filter(example__metadata__mode="conversation"))
    # The target is replayed too, so both have measured throughput.
    target_replay = Replay.objects.create(round=round_, model=target)
    from generative_bench.replay.jobs import run_replay_job

    run_replay_job(target_replay.pk)
    target_replay.refresh_from_db()
    assert target_replay.status == "done"

    # People rate the second model's replayed answers: two of six judged failed.
    assert open_rating(replay=replay, user=owner) == 6
    rated = list(
        answers.filter(rating_example__isnull=False).order_by("pk").values_list("rating_example", flat=True)
    )
    assert _validate_all(round_, validators[1:], lambda e: FAILED if e.pk in rated[:2] else GOOD) == 2 * 6

    # 2. The judge answers the rubric for every human-judged and every replayed answer.
    run_judge(judge=judge, user=owner)
    judge.refresh_from_db()
    assert judge.verdicts.count() == 8 + 6 + 6  # its task's conversations, and both replays' answers
    agreement = judge_agreement(judge)
    # Settled by people: the 6 claimed failures and the 6 rated answers; unreadable verdicts left out.
    # SmolLM2 does not write the JSON asked for; its answers are then chosen question by question, so
    # every verdict is readable and the kappa has its interval.
    assert (agreement.n, agreement.left_out) == (12, 0)
    assert agreement.kappa is not None and agreement.kappa_interval is not None
    low, high = agreement.kappa_interval
    assert -1 <= low <= agreement.kappa <= high <= 1
    page = client.get("/tasks/red-team/judges/").content.decode()
    assert "kappa" in page.lower() and JUDGE in page

    # 3. The arena: three people vote on 6 pairs (two each; the arena's own tests vote on 30).
    voters = [UserFactory() for _ in range(3)]
    rng = random.Random(7)
    votes = []
    for n in range(6):
        voter = voters[n % 3]
        battle = start_battle(
            task=task, voter=voter, prompt=f"Say something about rivers, please ({n}).", rng=rng
        )
        assert battle.status == Battle.Status.READY and battle.model_a_id != battle.model_b_id
        choice = rng.choice(["a", "b", "b", "tie", "both_bad"])
        battle, recorded = vote(battle=battle, voter=voter, vote=choice)
        assert recorded
        votes.append(Vote(battle.model_a_id, battle.model_b_id, choice))
    ranking = arena_ranking(task)
    expected = rank(votes, models=sorted(m.pk for m in (target, second)))
    assert ranking.n_votes == 6
    for key in (target.pk, second.pk):
        assert ranking.scores[key] == pytest.approx(expected.scores[key])
        low, high = ranking.intervals[key]
        assert low <= ranking.scores[key] <= high

    # 4. The generative leaderboard: Bradley-Terry with intervals beside MC accuracy, ASR and throughput.
    board = generative_board(task, owner)
    rows = {row["name"]: row for row in board["rows"]}
    assert set(rows) == {TARGET, SECOND}
    for name, model in ((TARGET, target), (SECOND, second)):
        values = rows[name]["values"]
        assert values["bt"] == pytest.approx(ranking.scores[model.pk])
        assert rows[name]["bt_interval"] == list(ranking.intervals[model.pk])
        assert values["perf"] is not None and values["tokens_per_second"] > 0
    # People's attack success rate: the target's verified failures (4) of its 8 conversations; the
    # second model's rated answers, 2 failed of 6.
    assert rows[TARGET]["values"]["asr_people"] == pytest.approx(4 / 8)
    assert rows[SECOND]["values"]["asr_people"] == pytest.approx(2 / 6)
    ranked = [row["name"] for row in board["rows"] if row["rank"] is not None]
    assert ranked, board
    html = client.get("/tasks/red-team/leaderboard/generative/").content.decode()
    assert "Bradley-Terry" in html and "6 votes" in html

    # 5. The official openai client streams an answer from the OpenAI-compatible endpoint.
    owner_token = Token.objects.get_or_create(user=owner)[0].key
    api = openai.OpenAI(base_url=f"{live_server.url}/v1", api_key=owner_token, max_retries=0)
    ids = [m.id for m in api.models.list().data]
    assert f"red-team/{TARGET}" in ids
    stream = api.chat.completions.create(
        model=f"red-team/{TARGET}",
        messages=[{"role": "user", "content": "Name a river."}],
        stream=True,
        max_tokens=8,
        temperature=0,
    )
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    assert text.strip()
