"""The replay job (``generative_bench.jobs.run_replay_job``): on the real SmolLM2, every settled prompt of
a round answered as the model answers it alone (kept turns and regenerated turns, built by hand here),
multiple-choice items picked as ``choose`` picks; with stand-in generators, a cancel between batches, a
resumed run that skips what is answered (generate calls counted), a crash that leaves one item failed
with its error after its tries, a run handed over to the next; on the loopback chat server, 429s retried
until the answer comes, its cost stored exactly."""

from __future__ import annotations

from decimal import Decimal

import pytest

from annotation.models import Example
from annotation.red_team.choice_items import choice_messages
from generative_bench.jobs import run_replay_job
from generative_bench.models import Replay, ReplayAnswer
from generative_bench.replay import jobs
from generative_bench.replay.jobs import keep_messages, regenerate_messages
from generative_bench.replay.services import request_replay
from models_registry import generative
from models_registry.models import RegisteredModel
from tests.generative_bench.replay_world import install_stand_in, replay_world
from tests.helpers.chat_server import ChatServer

pytestmark = pytest.mark.django_db

SYSTEM = {
    "role": "system",
    "content": "Article: Amazon\n\nPassage: The Amazon river flows through Brazil. It is about 6,400 km long.",
}


@pytest.fixture
def world(smollm2_dir):
    return replay_world(smollm2_dir)


@pytest.fixture
def stand_in(monkeypatch):
    return lambda **kwargs: install_stand_in(monkeypatch, **kwargs)


def _replay(world, *, model=None, target_turns="keep") -> Replay:
    """A queued replay (the job not run: the request's on_commit never runs inside the test's transaction)."""
    return request_replay(round_=world["round"], model=model or world["second"], target_turns=target_turns)


def _only(world, *names):
    """Leave only the world's ``names`` to replay (the others retracted), to keep the model's work short."""
    keep = {world[n].pk for n in names}
    Example.objects.filter(round=world["round"]).exclude(pk__in=keep).update(is_retracted=True)


def test_keep_and_regenerate_send_the_messages_built_by_hand(world):
    cfg, two = world["task"].cfg, world["two"]
    assert keep_messages(two, cfg) == [
        SYSTEM,
        {"role": "user", "content": "Where does the Amazon flow?"},
        {"role": "assistant", "content": "Through Brazil."},  # the target's stored answer, kept
        {"role": "user", "content": "And how long is it?"},
    ]
    assert regenerate_messages(two, cfg, []) == [
        SYSTEM,
        {"role": "user", "content": "Where does the Amazon flow?"},
    ]
    assert regenerate_messages(two, cfg, ["Brazil, mostly. 🇧🇷"]) == [
        SYSTEM,
        {"role": "user", "content": "Where does the Amazon flow?"},
        {"role": "assistant", "content": "Brazil, mostly. 🇧🇷"},  # the model's own answer, not the target's
        {"role": "user", "content": "And how long is it?"},
    ]
    with pytest.raises(jobs.ItemError):
        regenerate_messages(two, cfg, ["a", "b"])
    broken = Example(
        inputs={"messages": [{"role": "user", "content": "no answer"}]}, context=world["passage"]
    )
    with pytest.raises(jobs.ItemError):
        keep_messages(broken, cfg)


def test_keep_replays_every_settled_prompt_as_the_model_answers_it_alone(world):
    replay = _replay(world)
    assert run_replay_job(replay.pk) == "done"
    replay.refresh_from_db()
    assert (replay.status, replay.total, replay.done, replay.failed) == ("done", 4, 4, 0)
    assert replay.progress == "4 of 4 answered, 0 failed" and replay.finished_at and replay.started_at
    answers = {a.example_id: a for a in ReplayAnswer.objects.filter(replay=replay)}
    replayed = {world[n].pk for n in ("one", "two", "rtl", "item")}
    assert set(answers) == replayed  # pending, retracted, flagged and the pending item left out
    second = world["second"]
    for name in ("one", "two", "rtl"):
        answer = answers[world[name].pk]
        sent = keep_messages(world[name], world["task"].cfg)
        alone = generative.chat_stream(second, sent).drain()
        assert answer.status == "ok" and answer.attempts == 1 and answer.error == ""
        assert answer.messages == sent
        assert answer.answer == alone.text and answer.answers == [alone.text] and alone.text
        assert answer.tokens == alone.output_tokens == answer.generation["output_tokens"]
        assert answer.seconds == pytest.approx(answer.generation["latency_ms"] / 1000)
        assert answer.first_token_seconds == pytest.approx(answer.generation["first_token_ms"] / 1000)
        assert answer.cost is None and answer.picked is None  # no prices
    item = answers[world["item"].pk]
    sent = choice_messages(world["passage"], "How long is the Amazon?", world["round"])
    picked = generative.choose(second, sent, ["About 100 km", "About 6,400 km", "About 9 km"]).picked
    assert (item.picked, item.correct, item.messages) == (picked, picked == 1, sent)
    assert item.answer == ["About 100 km", "About 6,400 km", "About 9 km"][picked]
    assert item.generation["method"] == "likelihood" and item.tokens is None


def test_regenerate_asks_for_every_answer_on_the_models_own_earlier_answers(world):
    _only(world, "two")
    replay = _replay(world, target_turns="regenerate")
    assert run_replay_job(replay.pk) == "done"
    answer = ReplayAnswer.objects.get(replay=replay)
    cfg, second = world["task"].cfg, world["second"]
    first = generative.chat_stream(second, regenerate_messages(world["two"], cfg, [])).drain()
    sent = regenerate_messages(world["two"], cfg, [first.text])
    last = generative.chat_stream(second, sent).drain()
    assert answer.messages == sent and sent[2] == {"role": "assistant", "content": first.text}
    assert answer.answers == [first.text, last.text] and answer.answer == last.text
    assert answer.tokens == first.output_tokens + last.output_tokens
    assert answer.generation["output_tokens"] == last.output_tokens  # the last answer's record


def test_a_cancel_stops_the_job_between_batches_and_a_resumed_run_skips_what_is_answered(
    world, stand_in, django_capture_on_commit_callbacks
):
    replay = _replay(world)
    fake = stand_in(after_call=lambda: Replay.objects.filter(pk=replay.pk).update(status="cancelled"))
    assert run_replay_job(replay.pk) == "cancelled"
    replay.refresh_from_db()
    assert (replay.status, replay.done, replay.total) == ("cancelled", 1, 4)
    assert len(fake.sent) == 1 and fake.chosen == 0  # one batch of one, then the cancel was seen
    first = set(ReplayAnswer.objects.filter(replay=replay).values_list("example_id", flat=True))

    fake.after_call = None
    with django_capture_on_commit_callbacks(execute=True):  # the job runs inline once the request commits
        again = request_replay(round_=world["round"], model=world["second"])
    assert again.pk == replay.pk
    replay.refresh_from_db()
    assert (replay.status, replay.done, replay.failed) == ("done", 4, 0)
    assert len(fake.sent) == 1 + 2 and fake.chosen == 1  # the two conversations left and the item
    assert ReplayAnswer.objects.filter(replay=replay, example_id__in=first, attempts=1).count() == 1
    one = ReplayAnswer.objects.get(replay=replay, example=world["one"])
    assert one.cost == Decimal("0.00100000") and one.tokens == 4 and one.seconds == 0.5
    assert one.first_token_seconds == 0.1 and one.answer == "answer to How long is the Amazon? 🌊"


def test_a_crash_leaves_its_item_failed_with_the_error_after_its_tries(world, stand_in, monkeypatch):
    fake = stand_in(crash_on="ما طول")  # the right-to-left conversation's message
    replay = _replay(world)
    assert run_replay_job(replay.pk) == "done"
    replay.refresh_from_db()
    assert (replay.status, replay.done, replay.failed) == ("done", 3, 1)
    failed = ReplayAnswer.objects.get(replay=replay, example=world["rtl"])
    assert (failed.status, failed.error, failed.attempts) == (
        "failed",
        "RuntimeError: boom",
        jobs.MAX_ATTEMPTS,
    )
    assert failed.answer == "" and failed.tokens is None
    assert len(fake.sent) == 2  # the two others, once each: an answered item is not tried again

    fake.crash_on = None  # the model is mended: asked again, the failed item is answered
    monkeypatch.setattr("generative_bench.replay.services.enqueue", lambda *a, **k: None)
    request_replay(round_=world["round"], model=world["second"])
    assert run_replay_job(replay.pk) == "done"
    failed.refresh_from_db()
    assert (failed.status, failed.error, failed.attempts) == ("ok", "", jobs.MAX_ATTEMPTS + 1)
    assert failed.answer == "answer to ما طول نهر الأمازون؟"
    assert Replay.objects.get(pk=replay.pk).failed == 0


def test_a_replay_whose_every_item_fails_ends_failed_with_the_first_error(world, stand_in):
    stand_in(crash_on="")  # every message holds ""
    _only(world, "one", "two")
    replay = _replay(world)
    assert run_replay_job(replay.pk) == "failed"
    replay.refresh_from_db()
    assert (replay.done, replay.failed) == (0, 2)
    assert replay.error == "no item was answered; the first error: RuntimeError: boom"


def test_a_long_replay_hands_over_to_new_runs_until_it_is_done(world, stand_in, monkeypatch):
    fake = stand_in()
    monkeypatch.setattr(jobs, "run_seconds", lambda: -1.0)  # every run past its time after one batch
    runs = []
    original = jobs._run
    monkeypatch.setattr(
        jobs, "_run", lambda replay, deadline: runs.append(1) or original(replay, deadline=deadline)
    )
    replay = _replay(world)
    assert run_replay_job(replay.pk) == "done"  # the next runs are queued inline (tests run jobs inline)
    assert len(runs) == 4 and len(fake.sent) == 3 and fake.chosen == 1
    assert Replay.objects.get(pk=replay.pk).done == 4


def test_a_remote_model_gets_its_429s_retried_and_its_cost_stored_exactly(world, smollm2):
    _only(world, "one")
    with ChatServer(smollm2) as server:
        remote = RegisteredModel.objects.create(
            task=world["task"],
            name="remote",
            source=RegisteredModel.Source.CHAT_ENDPOINT,
            endpoint_url=server.base_url,
            chat_model_name="fault-429",
            status="ready",
            generation={
                "max_new_tokens": 12,
                "temperature": 0.0,
                "price_input_per_million": 0.15,
                "price_output_per_million": 0.6,
            },
        )
        server.fail_first = (
            4  # the first try: three 429s (the client's two retries); the second: one, then the answer
        )
        replay = _replay(world, model=remote)
        assert run_replay_job(replay.pk) == "done"
        answer = ReplayAnswer.objects.get(replay=replay)
        assert (answer.status, answer.attempts, answer.error) == ("ok", 2, "")
        assert len(server.requests) == 5
        alone = world["second"]  # the same SmolLM2, local
        assert answer.answer == generative.chat_stream(alone, answer.messages).drain().text
        usage = answer.generation
        expected = Decimal(repr((usage["input_tokens"] * 0.15 + usage["output_tokens"] * 0.6) / 1_000_000))
        assert answer.cost == expected.quantize(Decimal("0.00000001"))


def test_a_greedy_replay_of_the_target_flags_an_answer_that_is_not_byte_identical(world):
    """The target (greedy) replayed on its own conversations: one whose stored answer is what it
    answers alone reproduces byte for byte; one whose stored answer was changed is flagged; a
    conversation held with another model is not compared, nor one whose stored answer was cut short
    (a timeout under load: not the model's whole answer)."""
    from annotation.models import Conversation
    from generative_bench.replay.selectors import reproduction_of
    from tests.generative_bench.replay_world import ONE_TURN, conversation

    cfg, target, round_ = world["task"].cfg, world["target"], world["round"]
    Example.objects.filter(round=round_).update(is_retracted=True)
    sent = keep_messages(world["one"], cfg)
    alone = generative.chat_stream(target, sent).drain()
    assert alone.finish_reason in ("stop", "length")
    greedy = {"decoding": {"temperature": 0.0}, "model": target.name, "finish_reason": alone.finish_reason}
    prompt = ONE_TURN[0][0]
    same = conversation(round_, world["passage"], [(prompt, alone.text)])
    changed = conversation(round_, world["passage"], [(prompt, alone.text + " (edited)")])
    elsewhere = conversation(round_, world["passage"], [(prompt, alone.text)])
    cut = conversation(round_, world["passage"], [(prompt, alone.text[:3])])
    records = {cut.pk: [{**greedy, "finish_reason": "timeout"}]}
    for example, model in ((same, target), (changed, target), (elsewhere, world["second"]), (cut, target)):
        example.metadata["generations"] = records.get(example.pk, [greedy])
        example.save()
        Conversation.objects.create(
            round=round_, context=world["passage"], annotator=example.annotator, model=model,
            status="submitted", example=example,
        )  # fmt: skip
    replay = _replay(world, model=target)
    assert run_replay_job(replay.pk) == "done"
    answers = {
        a.example_id: a.generation.get("reproduction") for a in ReplayAnswer.objects.filter(replay=replay)
    }
    assert answers[same.pk]["identical"] is True
    assert answers[same.pk]["stored_sha256"] == answers[same.pk]["replayed_sha256"]
    assert answers[changed.pk]["identical"] is False
    assert answers[elsewhere.pk] is None and answers[cut.pk] is None
    got = reproduction_of(replay)
    assert (got.compared, got.identical, got.differing) == (2, 1, (changed.pk,))
