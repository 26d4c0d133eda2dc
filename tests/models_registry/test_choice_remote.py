"""Multiple choice on a remote model (``endpoints.chat.choose_remote``) against the loopback server
serving the real SmolLM2: the letter with the highest log-probability is the pick; a server without
log-probabilities is read by its letter; no letter, or a 401, is a clear error with the key nowhere."""

from __future__ import annotations

import math

import pytest

from models_registry.endpoints.chat import RemoteChat, _letter_of, _lettered, choose_remote
from models_registry.runtime.generative import Decoding
from models_registry.runtime.model_files import InferenceError

KEY = "sk-choice-" + "x1" * 10
MESSAGES = [{"role": "system", "content": "Passage: Paris is the capital of France."},
            {"role": "user", "content": "What is the capital of France?"}]  # fmt: skip
OPTIONS = ["Madrid", "Paris", "Rome"]


def _remote(server, model="smollm2", monkeypatch=None):
    return RemoteChat(base_url=server.base_url, model=model, decoding=Decoding(), api_key_env="CHOICE_KEY")


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv("CHOICE_KEY", KEY)


def test_the_options_are_lettered_under_the_question():
    asked = _lettered(MESSAGES, OPTIONS)
    assert asked[0] == MESSAGES[0]
    assert asked[1]["content"] == (
        "What is the capital of France?\n\nA. Madrid\nB. Paris\nC. Rome\n\n"
        "Answer with the letter of the right option only (A, B, C)."
    )
    assert [_letter_of(t, "ABC") for t in ["B", " b", "B.", "(C)", "D", "Paris", ""]] == [
        1,
        1,
        1,
        2,
        None,
        None,
        None,
    ]


def test_the_pick_is_the_letter_with_the_highest_logprob(server, smollm2):
    scores = choose_remote(_remote(server), MESSAGES, OPTIONS)
    request = server.requests[-1]
    assert (request["logprobs"], request["top_logprobs"], request["max_tokens"], request["temperature"]) == (
        True,
        20,
        2,
        0.0,
    )
    # The same figures computed here from the model's logits for the prompt the server was sent.
    import torch

    inputs = smollm2.encode(request["messages"])
    with torch.inference_mode():
        logprobs = torch.log_softmax(smollm2.model(**inputs).logits[0, -1].float(), dim=-1)
    top = torch.topk(logprobs, 20)
    expected = [float("-inf")] * 3
    for value, index in zip(top.values, top.indices, strict=True):
        letter = _letter_of(smollm2.tokenizer.decode([int(index)]), "ABC")
        if letter is not None:
            expected[letter] = max(expected[letter], float(value))
    assert scores.method == "letter_logprobs"
    assert [round(s, 4) if math.isfinite(s) else s for s in scores.log_likelihoods] == [
        round(s, 4) if math.isfinite(s) else s for s in expected
    ]
    assert scores.picked == max(range(3), key=lambda i: expected[i])


def test_a_server_without_logprobs_is_read_by_its_letter(server):
    scores = choose_remote(_remote(server, "fault-nologprobs"), MESSAGES, OPTIONS)
    first, second = server.requests[-2:]
    assert first["logprobs"] is True and "logprobs" not in second
    assert scores.method == "letter" and scores.log_likelihoods[scores.picked] == 0.0


def test_an_answer_without_a_letter_is_a_clear_error(server):
    with pytest.raises(InferenceError, match=r"the model named no option's letter \(ABC\) in its answer"):
        choose_remote(_remote(server, "fault-noletter"), MESSAGES, OPTIONS)


def test_a_401_says_unauthorized_and_not_the_key(server, caplog):
    with pytest.raises(InferenceError) as refused:
        choose_remote(_remote(server, "fault-401"), MESSAGES, OPTIONS)
    assert (
        "401 unauthorized" in str(refused.value) and KEY not in str(refused.value) and KEY not in caplog.text
    )
