"""Continuous batching of a local chat model's answers (engine/runtime/batcher.py), on the real SmolLM2:
answers joining a running batch at any step are the tokens ``generate`` gives each alone; a seeded
sample repeats whatever shares its batch; a cancelled answer leaves at the next step and the others go on;
a failing step ends its rows with the error and the next answer is served."""

from __future__ import annotations

import threading
import time

import pytest
import torch

from engine.runtime import generative, slots
from engine.runtime.batcher import BatchRequest, ContinuousBatcher
from engine.runtime.generative import Decoding

PROMPTS = [
    "What is the capital of France?",
    "Write a short poem about the sea.",
    "List three colours.",
    "Explain what a round is in a game, in two sentences.",
]


def _ids(smollm2, text: str) -> list[int]:
    return smollm2.encode([{"role": "user", "content": text}])["input_ids"][0].tolist()


def _alone(smollm2, ids: list[int], budget: int) -> list[int]:
    """The greedy tokens ``generate`` gives the prompt alone, its end-of-turn token included."""
    with torch.inference_mode():
        out = smollm2.model.generate(
            torch.tensor([ids]),
            max_new_tokens=budget,
            do_sample=False,
            temperature=None,
            top_p=None,
            top_k=None,
        )
    return out[0, len(ids) :].tolist()


@pytest.fixture
def batcher(smollm2):
    """A batcher of its own over the shared SmolLM2 (its steps and rows counted from zero)."""
    batcher = ContinuousBatcher(smollm2.model, smollm2.tokenizer, max_rows=8, eos_ids=[2])
    yield batcher
    batcher.close()


def test_answers_joining_at_any_step_are_each_the_answer_alone(smollm2, batcher):
    budget = 24
    prompts = [_ids(smollm2, text) for text in PROMPTS]
    requests = []
    for ids in prompts:
        request = BatchRequest(prompt=ids, max_new_tokens=budget)
        batcher.submit(request)
        requests.append(request)
        # The next joins while this one is decoding: its prompt is read between two steps.
        while len(request.generated) < 3 and not request.done.is_set():
            time.sleep(0.005)
    for request in requests:
        assert request.done.wait(120)
    # The rows shared steps: more rows decoded than steps run.
    assert batcher.row_steps > batcher.steps
    for request, ids in zip(requests, prompts, strict=True):
        assert request.generated == _alone(smollm2, ids, budget)
        assert request.finish == ("stop" if request.generated[-1] == 2 else "length")


def test_a_seeded_sample_repeats_alone_and_in_a_batch_and_another_seed_differs(smollm2, batcher):
    ids = _ids(smollm2, PROMPTS[1])

    def sample(seed: int, company: int) -> list[int]:
        others = [BatchRequest(prompt=_ids(smollm2, text), max_new_tokens=30) for text in PROMPTS[:company]]
        for other in others:
            batcher.submit(other)
        request = BatchRequest(
            prompt=ids, max_new_tokens=16, temperature=0.9, top_p=0.95, top_k=50, seed=seed
        )
        batcher.submit(request)
        assert request.done.wait(120)
        for other in others:
            assert other.done.wait(120)
        return request.generated

    alone = sample(7, company=0)
    assert sample(7, company=3) == alone
    assert sample(8, company=0) != alone


def test_a_cancelled_answer_leaves_at_the_next_step_and_the_others_go_on(smollm2, batcher):
    long = BatchRequest(prompt=_ids(smollm2, "Tell me a long story about the sea."), max_new_tokens=200)
    ids = _ids(smollm2, PROMPTS[0])
    other = BatchRequest(prompt=ids, max_new_tokens=24)
    batcher.submit(long)
    batcher.submit(other)
    while len(long.generated) < 3:
        time.sleep(0.005)
    batcher.cancel(long)
    assert long.done.wait(30)
    assert long.finish == "cut_short" and 3 <= len(long.generated) <= 5
    assert other.done.wait(120)
    assert other.generated == _alone(smollm2, ids, 24)
    assert batcher.rows() == 0


def test_a_request_cancelled_while_waiting_for_a_row_ends_with_nothing(smollm2):
    batcher = ContinuousBatcher(smollm2.model, smollm2.tokenizer, max_rows=1, eos_ids=[2])
    try:
        first = BatchRequest(prompt=_ids(smollm2, PROMPTS[1]), max_new_tokens=40)
        second = BatchRequest(prompt=_ids(smollm2, PROMPTS[0]), max_new_tokens=40)
        batcher.submit(first)
        batcher.submit(second)
        while not first.started.is_set():
            time.sleep(0.005)
        assert batcher.ahead_of(second) == 0 and not second.started.is_set()
        batcher.cancel(second)
        assert (second.finish, second.generated) == ("cut_short", [])
        assert first.done.wait(120) and first.finish in ("stop", "length")
    finally:
        batcher.close()


def test_a_failing_step_ends_its_rows_with_the_error_and_the_next_answer_is_served(
    smollm2, batcher, monkeypatch
):
    forward, calls = smollm2.model.forward, []

    def breaking(*args, **kwargs):
        calls.append(1)
        if len(calls) == 4:  # the prompt read, two steps, then the third step fails
            raise RuntimeError("out of memory")
        return forward(*args, **kwargs)

    monkeypatch.setattr(smollm2.model, "forward", breaking)
    broken = BatchRequest(prompt=_ids(smollm2, PROMPTS[1]), max_new_tokens=40)
    batcher.submit(broken)
    assert broken.done.wait(60)
    assert (broken.finish, str(broken.error), len(broken.generated)) == ("error", "out of memory", 3)
    ids = _ids(smollm2, PROMPTS[0])
    after = BatchRequest(prompt=ids, max_new_tokens=12)
    batcher.submit(after)
    assert after.done.wait(60)
    monkeypatch.setattr(smollm2.model, "forward", forward)
    assert after.generated == _alone(smollm2, ids, 12)


def test_streams_of_one_model_decode_together_and_a_reader_who_leaves_frees_the_row(smollm2, monkeypatch):
    monkeypatch.setattr(generative, "GENERATION_SLOTS", slots.GenerationSlots(4))
    before_steps, before_rows = smollm2.batcher.steps, smollm2.batcher.row_steps
    decoding = Decoding(max_new_tokens=20)
    texts: dict[int, str] = {}

    def read(index: int) -> None:
        texts[index] = smollm2.generate([{"role": "user", "content": PROMPTS[index]}], decoding).text

    threads = [threading.Thread(target=read, args=(i,)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert smollm2.batcher.row_steps - before_rows > smollm2.batcher.steps - before_steps
    alone = {
        i: smollm2.tokenizer.decode(_alone(smollm2, _ids(smollm2, PROMPTS[i]), 20), skip_special_tokens=True)
        for i in range(3)
    }
    assert texts == alone
    # A reader who leaves: its row is gone by the next step, nothing keeps decoding for it.
    stream = smollm2.stream(
        [{"role": "user", "content": "Tell me about the sea."}], Decoding(max_new_tokens=200)
    )
    next(stream)
    stream.close()
    assert stream.generation.finish_reason == "cut_short"
    deadline = time.monotonic() + 5
    while smollm2.batcher.rows() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert smollm2.batcher.rows() == 0


def test_only_a_full_attention_cache_batches_rows():
    """A sliding-window cache keeps positions of its own that left padding would break: such a model
    answers one at a time (tiny random models built from their configs)."""
    from transformers import LlamaForCausalLM, MistralForCausalLM
    from transformers.models.llama import LlamaConfig
    from transformers.models.mistral import MistralConfig

    from engine.runtime.batcher import batchable

    shape = {
        "num_hidden_layers": 2,
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "vocab_size": 100,
    }
    llama = LlamaForCausalLM(LlamaConfig(**shape))
    mistral = MistralForCausalLM(MistralConfig(**shape, sliding_window=16))
    assert batchable(llama) and not batchable(mistral)
    assert ContinuousBatcher(llama, None, max_rows=8, eos_ids=[]).max_rows == 8
    assert ContinuousBatcher(mistral, None, max_rows=8, eos_ids=[]).max_rows == 1
