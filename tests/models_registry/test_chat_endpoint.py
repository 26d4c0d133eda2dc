"""A remote generative model: the official openai client against an OpenAI-compatible server on
loopback (tests/helpers/chat_server.py, serving the real SmolLM2), and against servers that misbehave."""

from __future__ import annotations

import logging
import time

import pytest

from engine.endpoints.addresses import EndpointAddressRefused
from engine.endpoints.chat import (
    MAX_RETRIES,
    RemoteChat,
    generate_remote,
    read_api_key,
    stream_remote,
)
from engine.runtime.generative import Decoding, InferenceError

CAPITAL = [{"role": "user", "content": "What is the capital of France?"}]
KEY = "sk-test-0123456789abcdef"


@pytest.fixture
def key_env(monkeypatch):
    monkeypatch.setenv("DYNABENCH_TEST_CHAT_KEY", KEY)
    return "DYNABENCH_TEST_CHAT_KEY"


def remote(server, model="smollm2", **extra) -> RemoteChat:
    return RemoteChat(base_url=server.base_url, model=model, decoding=Decoding(max_new_tokens=20), **extra)


def test_a_streamed_remote_answer_is_the_models_own_with_usage_and_cost(server, smollm2, key_env):
    chat = remote(server, api_key_env=key_env, price_input_per_million=0.5, price_output_per_million=2.0)
    stream = stream_remote(chat, CAPITAL)
    pieces = list(stream)
    generation = stream.generation
    local = smollm2.generate(CAPITAL, Decoding(max_new_tokens=20))
    # The server runs the same model greedily: the same text, the same token counts.
    assert "".join(pieces) == generation.text == local.text
    assert (generation.input_tokens, generation.output_tokens) == (local.input_tokens, local.output_tokens)
    assert generation.finish_reason == "stop"
    # cost = (input x 0.5 + output x 2.0) / 1e6
    assert generation.cost == pytest.approx((local.input_tokens * 0.5 + local.output_tokens * 2.0) / 1e6)
    assert 0 < generation.first_token_ms <= generation.latency_ms
    # What produced it: the server's model and its fingerprint (the loopback server sends "fp_loopback").
    assert generation.provenance["system_fingerprint"] == "fp_loopback"
    assert generation.provenance["server_model"] == chat.model
    # What was sent: the key as a bearer token, the decoding settings, usage asked for.
    (request,) = server.requests
    assert server.headers == [f"Bearer {KEY}"]
    assert (request["max_tokens"], request["temperature"], request["top_p"]) == (20, 0.0, 1.0)
    assert request["stream_options"] == {"include_usage": True}


def test_a_character_the_server_cut_in_two_is_not_passed_on(server):
    # A server that cut an answer inside a character sends U+FFFD for its first bytes: held back, dropped.
    server.reply = lambda request: "Hi 🌈\ufffd"  # streamed as "Hi" and " 🌈\ufffd"
    stream = stream_remote(remote(server), CAPITAL)
    assert (list(stream), stream.generation.text) == (["Hi", " 🌈"], "Hi 🌈")
    # A U+FFFD with text after it is the model's own: it stays.
    server.reply = lambda request: "a\ufffd b"  # streamed as "a\ufffd" and " b"
    stream = stream_remote(remote(server), CAPITAL)
    assert (list(stream), stream.generation.text) == (["a", "\ufffd b"], "a\ufffd b")


def test_a_reader_leaving_a_remote_answer_cuts_it_short(server):
    stream = stream_remote(remote(server, model="fault-endless"), CAPITAL)
    assert next(stream) == "la "
    stream.close()  # the reader left before the server ended the answer
    assert (stream.generation.text, stream.generation.finish_reason) == ("la ", "cut_short")


def test_the_system_prompt_is_sent_first(server):
    generate_remote(remote(server, system_prompt="Answer in one word."), CAPITAL)
    assert server.requests[0]["messages"] == [{"role": "system", "content": "Answer in one word."}, *CAPITAL]


def test_a_401_says_unauthorized_and_the_key_appears_nowhere(server, key_env, caplog):
    caplog.set_level(logging.DEBUG)
    with pytest.raises(InferenceError) as refused:
        generate_remote(remote(server, model="fault-401", api_key_env=key_env), CAPITAL)
    assert (
        str(refused.value)
        == "the chat server answered 401 unauthorized: check the API key the operator named"
    )
    assert KEY not in str(refused.value) and KEY not in caplog.text
    assert len(server.requests) == 1  # a 401 is not retried


def test_a_429_is_retried_and_then_answered(server):
    server.fail_first = MAX_RETRIES
    generation = generate_remote(remote(server, model="fault-429"), CAPITAL)
    assert "Paris" in generation.text and len(server.requests) == MAX_RETRIES + 1


def test_a_429_that_lasts_and_a_500_fail_after_the_retries(server):
    server.fail_first = 99
    with pytest.raises(InferenceError, match="answered 429 too many requests, 3 times"):
        generate_remote(remote(server, model="fault-429"), CAPITAL)
    assert len(server.requests) == MAX_RETRIES + 1 == 3
    with pytest.raises(InferenceError, match="^the chat server answered HTTP 500$"):
        generate_remote(remote(server, model="fault-500"), CAPITAL)


@pytest.mark.parametrize("fault", ["fault-garbage", "fault-cut"])
def test_a_stream_that_breaks_keeps_the_partial_answer_marked(server, fault):
    stream = stream_remote(remote(server, model=fault), CAPITAL)
    assert list(stream) == ["Half ", "an answer"]
    generation = stream.generation
    assert (generation.text, generation.finish_reason) == ("Half an answer", "error")
    assert generation.error.startswith("the stream broke off")


def test_a_stream_that_never_ends_is_cut_at_the_timeout_with_what_came(server):
    started = time.perf_counter()
    generation = generate_remote(remote(server, model="fault-endless", timeout=1.0), CAPITAL)
    assert time.perf_counter() - started < 3
    assert generation.finish_reason == "timeout" and generation.text.startswith("la la ")
    assert generation.error == "the answer did not end within the time limit"


def test_a_server_that_never_answers_fails_in_time(server):
    started = time.perf_counter()
    with pytest.raises(InferenceError, match="did not answer in time"):
        generate_remote(remote(server, model="fault-hang", timeout=0.5), CAPITAL)
    # three attempts of 0.5 s, plus the client's short backoffs
    assert time.perf_counter() - started < 6


def test_loopback_is_refused_unless_the_operator_allows_it_and_nothing_is_sent(server, settings):
    settings.DYNABENCH_ENDPOINT_ALLOWED_NETWORKS = []
    with pytest.raises(EndpointAddressRefused, match="loopback address"):
        generate_remote(remote(server), CAPITAL)
    assert server.requests == []


def test_the_connection_itself_is_checked_when_the_name_resolves_elsewhere_later(
    server, settings, monkeypatch
):
    """DNS rebinding: the registration check passes, then the name resolves to a refused address; the
    guarded transport refuses before connecting."""
    import socket

    from engine.endpoints import chat

    monkeypatch.setattr(chat, "check_endpoint_url", lambda url: None)  # the earlier check passed
    settings.DYNABENCH_ENDPOINT_ALLOWED_NETWORKS = []
    port = int(server.base_url.rsplit(":", 1)[1].split("/")[0])
    real = socket.getaddrinfo
    monkeypatch.setattr(
        socket,
        "getaddrinfo",
        lambda host, *a, **k: (
            real("127.0.0.1", port, type=socket.SOCK_STREAM)
            if host == "chat.example"
            else real(host, *a, **k)
        ),
    )
    chat_model = RemoteChat(base_url=f"http://chat.example:{port}/v1", model="smollm2")
    with pytest.raises(EndpointAddressRefused, match="loopback"):
        generate_remote(chat_model, CAPITAL)
    assert server.requests == []


def test_the_key_is_read_from_the_named_variable_or_file(tmp_path, monkeypatch):
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    with pytest.raises(
        InferenceError, match="^the API key variable NO_SUCH_KEY_VAR is not set on the server$"
    ):
        read_api_key("NO_SUCH_KEY_VAR")
    key_file = tmp_path / "key"
    key_file.write_text(f"{KEY}\nignored\n")
    assert read_api_key(api_key_file=str(key_file)) == KEY
    key_file.write_text("")
    with pytest.raises(InferenceError, match="cannot be read or is empty"):
        read_api_key(api_key_file=str(key_file))
    assert read_api_key() is None


def test_the_cost_needs_both_prices_and_both_counts():
    chat = RemoteChat(
        base_url="http://x/v1", model="m", price_input_per_million=3.0, price_output_per_million=15.0
    )
    assert chat.cost(1_000, 500) == pytest.approx((1_000 * 3.0 + 500 * 15.0) / 1e6) == pytest.approx(0.0105)
    assert chat.cost(None, 500) is None
    assert RemoteChat(base_url="http://x/v1", model="m").cost(1, 1) is None
