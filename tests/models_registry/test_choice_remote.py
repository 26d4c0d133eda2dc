"""Multiple choice on a remote model (``endpoints.chat.choose_remote``) against the loopback server
serving the real SmolLM2: the letter with the highest log-probability is the pick; a server without
log-probabilities is read by its letter; no letter, or a 401, is a clear error with the key nowhere."""

from __future__ import annotations

import uuid

import pytest

from annotation.red_team.choice_items import write_choice_item
from engine.endpoints.chat import RemoteChat, _letter_of, _lettered, choose_remote
from engine.runtime.generative import Decoding
from engine.runtime.model_files import InferenceError
from models_registry import generative
from models_registry.models import RegisteredModel, RoundTarget
from tests.factories.red_team import make_passage, make_red_team_round

KEY = "sk-choice-" + "x1" * 10
MESSAGES = [{"role": "system", "content": "Passage: Paris is the capital of France."},
            {"role": "user", "content": "What is the capital of France?"}]  # fmt: skip
OPTIONS = ["Madrid", "Paris", "Rome"]


def _remote(server, model="smollm2"):
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
    expected = [None] * 3
    for value, index in zip(top.values, top.indices, strict=True):
        letter = _letter_of(smollm2.tokenizer.decode([int(index)]), "ABC")
        if letter is not None and expected[letter] is None:  # topk is sorted: the first is the highest
            expected[letter] = float(value)
    assert scores.method == "letter_logprobs" and any(e is not None for e in expected)
    assert [None if s is None else round(s, 4) for s in scores.log_likelihoods] == [
        None if e is None else round(e, 4) for e in expected
    ]
    assert scores.normalised == scores.log_likelihoods
    assert scores.picked == max((i for i in range(3) if expected[i] is not None), key=lambda i: expected[i])
    assert scores.picked_unnormalised == scores.picked


def test_a_server_without_logprobs_is_read_by_its_letter(server):
    scores = choose_remote(_remote(server, "fault-nologprobs"), MESSAGES, OPTIONS)
    first, second = server.requests[-2:]
    assert first["logprobs"] is True and "logprobs" not in second
    assert scores.method == "letter" and scores.log_likelihoods == (None, None, None)
    # The pick is the letter SmolLM2 answers, greedily, to the lettered question.
    answered = server.model.generate(second["messages"], Decoding(temperature=0.0, max_new_tokens=2)).text
    assert scores.picked == _letter_of(answered[:3], "ABC")


def test_an_answer_without_a_letter_is_a_clear_error(server):
    with pytest.raises(
        InferenceError, match=r"^the model named no option's letter \(A, B, C\) in its answer$"
    ):
        choose_remote(_remote(server, "fault-noletter"), MESSAGES, OPTIONS)


def test_a_401_says_unauthorized_and_not_the_key(server, caplog):
    with pytest.raises(InferenceError) as refused:
        choose_remote(_remote(server, "fault-401"), MESSAGES, OPTIONS)
    assert (
        "401 unauthorized" in str(refused.value) and KEY not in str(refused.value) and KEY not in caplog.text
    )


def test_a_streamed_request_gets_the_same_first_token_logprobs(server):
    """The loopback server honours ``logprobs`` when streaming too: on the first piece, as answered whole."""
    import openai

    client = openai.OpenAI(api_key=KEY, base_url=server.base_url, max_retries=0)
    asked = {"model": "smollm2", "messages": _lettered(MESSAGES, OPTIONS), "temperature": 0.0,
             "max_tokens": 2, "logprobs": True, "top_logprobs": 5}  # fmt: skip
    whole = client.chat.completions.create(**asked).choices[0].logprobs.content[0]
    chunks = [c for c in client.chat.completions.create(**asked, stream=True) if c.choices]
    first = chunks[0].choices[0].logprobs.content[0]
    assert [(t.token, round(t.logprob, 4)) for t in first.top_logprobs] == [
        (t.token, round(t.logprob, 4)) for t in whole.top_logprobs
    ]
    assert len(first.top_logprobs) == 5 and all(c.choices[0].logprobs is None for c in chunks[1:])
    client.close()


def _remote_target(server, round_, chat_model_name: str) -> RegisteredModel:
    """A chat-endpoint model on the loopback server, the round's only target, with a system prompt."""
    round_.targets.all().delete()
    model = RegisteredModel.objects.create(
        task=round_.task,
        name=f"remote-{chat_model_name}",
        source=RegisteredModel.Source.CHAT_ENDPOINT,
        endpoint_url=server.base_url,
        chat_model_name=chat_model_name,
        api_key_env="CHOICE_KEY",
        status="ready",
        generation={"system_prompt": "Answer from the passage."},
    )
    RoundTarget.objects.create(round=round_, model=model)
    return model


def test_a_registered_remote_model_chooses_by_letter_with_its_system_prompt(db, server, smollm2_dir):
    round_ = make_red_team_round(smollm2_dir)
    model = _remote_target(server, round_, "smollm2")
    scores = generative.choose(model, MESSAGES, OPTIONS)
    sent = server.requests[-1]["messages"]
    assert sent[0] == {
        "role": "system",
        "content": "Answer from the passage.\n\nPassage: Paris is the capital of France.",
    }
    assert sent[1]["content"] == _lettered(MESSAGES, OPTIONS)[1]["content"]
    by_hand = choose_remote(
        RemoteChat(
            base_url=server.base_url,
            model="smollm2",
            system_prompt="Answer from the passage.",
            api_key_env="CHOICE_KEY",
        ),
        MESSAGES,
        OPTIONS,
    )
    assert scores == by_hand and scores.method == "letter_logprobs"


def test_a_remote_pick_without_scores_is_stored_with_null_scores(db, server, smollm2_dir, annotator):
    """An unknown score is None (JSON null): PostgreSQL's JSON has no -Infinity to store."""
    round_ = make_red_team_round(smollm2_dir)
    _remote_target(server, round_, "fault-nologprobs")
    example, created = write_choice_item(
        round_=round_,
        annotator=annotator,
        context=make_passage(round_),
        question="How long is the Amazon?",
        answer="About 6,400 km",
        negatives=["About 9,000 km", "About 100 km"],
        client_token=uuid.uuid4(),
    )
    example.refresh_from_db()
    assert created and example.metadata["method"] == "letter"
    assert example.metadata["log_likelihoods"] == example.metadata["normalised"] == [None, None, None]
    assert example.model_wrong == (example.metadata["picked"] != example.target["answer"])
