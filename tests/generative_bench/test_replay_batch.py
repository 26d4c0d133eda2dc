"""Batched generation for replay (``LocalChatModel.generate_batch``, ``models_registry.generative
.generate_batch``) on the real SmolLM2: greedy batched answers are the unbatched ones, a conversation that
cannot be answered fails alone, a batch holds the generation slot; a remote model answers one by one
through the loopback chat server, a 429 retried."""

from __future__ import annotations

import threading
import time

import pytest

from engine.runtime import generative as runtime
from engine.runtime.generative import Decoding, Generation
from engine.runtime.slots import GENERATION_SLOTS
from models_registry import generative
from models_registry.models import RegisteredModel
from tests.factories.red_team import make_red_team_round
from tests.helpers.chat_server import ChatServer

PASSAGE = {"role": "system", "content": "Article: Amazon\n\nPassage: The Amazon river flows through Brazil."}
# Prompts of different lengths (so the batch is padded), with an emoji, right-to-left text, CRLF and turns.
CONVERSATIONS = [
    [{"role": "user", "content": "What is the capital of France?"}],
    [PASSAGE, {"role": "user", "content": "Where does the Amazon flow? 🌊"}],
    [{"role": "user", "content": "ما هي عاصمة مصر؟"}],
    [
        {"role": "user", "content": "List three colours.\r\nOnly three."},
        {"role": "assistant", "content": "Red, green, blue."},
        {"role": "user", "content": "And three more?"},
    ],
    [{"role": "user", "content": "Say hello."}],
]
GREEDY = Decoding(max_new_tokens=10)


@pytest.fixture
def chat_server(smollm2):
    with ChatServer(smollm2) as running:
        yield running


def test_greedy_batched_answers_are_the_unbatched_answers(smollm2):
    alone = [smollm2.stream(c, GREEDY).drain() for c in CONVERSATIONS]
    batched = smollm2.generate_batch(CONVERSATIONS, GREEDY, batch_size=3)  # two batches, padded
    assert [g.text for g in batched] == [g.text for g in alone]
    assert [g.output_tokens for g in batched] == [g.output_tokens for g in alone]
    assert [g.finish_reason for g in batched] == [g.finish_reason for g in alone]
    assert [g.input_tokens for g in batched] == [g.input_tokens for g in alone]
    assert all(g.text for g in batched)
    # "The capital of France is Paris." ends with its end-of-turn token inside the budget of 10.
    assert batched[0].text == "The capital of France is Paris." and batched[0].finish_reason == "stop"
    for generation in batched:
        assert generation.error == "" and generation.extra["batch_size"] in (2, 3)
        assert 0 < generation.first_token_ms <= generation.latency_ms
        assert generation.decoding == GREEDY.as_dict() and generation.seed is None


def test_a_stop_string_ends_a_batched_answer_as_it_ends_one_alone(smollm2):
    decoding = Decoding(max_new_tokens=10, stop=("Paris",))
    alone = smollm2.stream(CONVERSATIONS[0], decoding).drain()
    batched = smollm2.generate_batch([CONVERSATIONS[0], CONVERSATIONS[4]], decoding)
    assert batched[0].text == alone.text == "The capital of France is "
    assert batched[0].output_tokens == alone.output_tokens
    assert batched[0].finish_reason == alone.finish_reason == "stop"


def test_a_conversation_that_cannot_be_answered_fails_alone(smollm2, monkeypatch):
    short = smollm2.count_tokens(CONVERSATIONS[0])
    monkeypatch.setattr(smollm2, "context_limit", short + GREEDY.max_new_tokens)  # the first one just fits
    too_long = [{"role": "user", "content": "A much longer message, " * 20}]
    malformed = [{"role": "assistant", "content": "no user message"}]
    batched = smollm2.generate_batch([CONVERSATIONS[0], too_long, malformed], GREEDY)
    assert batched[0].text == "The capital of France is Paris."
    assert batched[1].finish_reason == "error" and batched[1].text == ""
    assert (
        batched[1].error.startswith("the conversation is ")
        and "exceeds the model's context" in batched[1].error
    )
    assert batched[2].finish_reason == "error" and batched[2].error == "the last message must be the user's"


def test_a_model_that_crashes_fails_every_answer_of_its_batch_with_why(smollm2, monkeypatch):
    def crash(**kwargs):
        raise RuntimeError("out of memory at /srv/secret/path")

    monkeypatch.setattr(smollm2.model, "generate", crash)
    batched = smollm2.generate_batch(CONVERSATIONS[:2], GREEDY)
    assert [g.finish_reason for g in batched] == ["error", "error"]
    assert all(g.error.startswith("RuntimeError: out of memory") for g in batched)


def test_a_batch_waits_for_the_generation_slot_and_holds_it(smollm2, monkeypatch):
    """Without torch (``_run_batch`` replaced): the batches start only once the slot is free, each
    holding it."""
    order: list[str] = []

    def fake_run(model, prompts, decoding, timeout, *, queued_ms):
        order.append(f"batch of {len(prompts)}, slot held: {len(GENERATION_SLOTS._holding)}")
        return [Generation(text="ok", finish_reason="stop", model="m", decoding={}) for _ in prompts]

    monkeypatch.setattr(runtime, "_run_batch", fake_run)
    with GENERATION_SLOTS.slot():
        worker = threading.Thread(target=lambda: smollm2.generate_batch(CONVERSATIONS, GREEDY, batch_size=3))
        worker.start()
        time.sleep(0.3)
        assert order == []  # waiting for the slot the test holds
    worker.join(timeout=10)
    assert order == ["batch of 3, slot held: 1", "batch of 2, slot held: 1"]


def test_the_registry_batch_puts_the_system_prompt_first_and_prices_the_answers(db, smollm2_dir, smollm2):
    round_ = make_red_team_round(
        smollm2_dir,
        generation={
            "max_new_tokens": 10,
            "temperature": 0.0,
            "system_prompt": "Answer briefly.",
            "price_input_per_million": 2.0,
            "price_output_per_million": 10.0,
        },
    )
    model = round_.targets.get().model
    answers = generative.generate_batch(model, [CONVERSATIONS[1], CONVERSATIONS[0]])
    alone = generative.chat_stream(model, CONVERSATIONS[1]).drain()
    assert answers[0].text == alone.text
    assert answers[0].input_tokens == smollm2.count_tokens(
        [{"role": "system", "content": "Answer briefly.\n\n" + PASSAGE["content"]}, CONVERSATIONS[1][1]]
    )
    first = answers[0]
    assert first.cost == pytest.approx((first.input_tokens * 2.0 + first.output_tokens * 10.0) / 1e6)


def _remote(round_, server, chat_model_name: str) -> RegisteredModel:
    return RegisteredModel.objects.create(
        task=round_.task,
        name=f"remote-{chat_model_name}",
        source=RegisteredModel.Source.CHAT_ENDPOINT,
        endpoint_url=server.base_url,
        chat_model_name=chat_model_name,
        status="ready",
        generation={"max_new_tokens": 10, "temperature": 0.0, "timeout": 60},
    )


def test_a_remote_model_answers_one_by_one_as_the_local_one(db, smollm2_dir, smollm2, chat_server):
    round_ = make_red_team_round(smollm2_dir)
    answers = generative.generate_batch(_remote(round_, chat_server, "smollm2"), CONVERSATIONS[:2], GREEDY)
    local = smollm2.generate_batch(CONVERSATIONS[:2], GREEDY)
    assert [a.text for a in answers] == [g.text for g in local]
    assert len(chat_server.requests) == 2 and all(r["stream"] for r in chat_server.requests)


def test_a_remote_429_is_retried_after_its_retry_after_and_a_500_fails_alone(db, smollm2_dir, chat_server):
    round_ = make_red_team_round(smollm2_dir)
    chat_server.fail_first = 2  # two 429s (retry-after-ms 10), then the answer: within the client's retries
    [answer] = generative.generate_batch(_remote(round_, chat_server, "fault-429"), CONVERSATIONS[:1], GREEDY)
    assert answer.text == "The capital of France is Paris." and answer.error == ""
    assert len(chat_server.requests) == 3
    broken = generative.generate_batch(_remote(round_, chat_server, "fault-500"), CONVERSATIONS[:2], GREEDY)
    assert [(g.finish_reason, g.error) for g in broken] == [
        ("error", "the chat server answered HTTP 500")
    ] * 2
    assert len(chat_server.requests) == 3 + 2 * 3  # each 500 tried three times (two retries)
