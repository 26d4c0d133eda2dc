"""Generative models behind an OpenAI-compatible chat-completions server (vLLM, llama.cpp's server,
Ollama, TGI, ``transformers serve``, hosted APIs), called with the official ``openai`` client.

The client's HTTP connections go through ``GuardedBackend``: every TCP connection is made by
``addresses.connect_checked``, so the endpoint rule (no loopback, private or link-local address unless the
operator allows its network) holds for chat servers exactly as for classifier endpoints, DNS rebinding
included. Proxies from the environment are not used (they would connect for us, unchecked).

The API key is never stored: ``RemoteChat`` names an environment variable or a file the operator
controls, read at call time. No message, log line or stored record carries it; errors from the server are
reported by status, not by echoing the server's text (which can quote the key).

    remote = RemoteChat(base_url="https://api.example.org/v1", model="m", api_key_env="EXAMPLE_KEY")
    stream = stream_remote(remote, [{"role": "user", "content": "Hi"}])
    for piece in stream: ...
    stream.generation     # Generation: text, finish reason, tokens, times, cost

An event loop reads the same stream with ``async for`` (``openai.AsyncOpenAI`` on a guarded async
transport): under an ASGI worker an answer streaming from a remote server holds no thread, so one
process carries hundreds of them (docs/serving.md, "Many streams per worker").
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import os
import re
import socket
import ssl
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import anyio.abc
import httpcore2
import httpx2
import openai
from httpcore2._backends.anyio import AnyIOBackend, AnyIOStream

from engine.endpoints.addresses import EndpointAddressRefused, check_endpoint_url, connect_checked
from engine.runtime.generative import (
    AnswerStream,
    ChoiceScores,
    Decoding,
    Generation,
    check_messages,
)
from engine.runtime.model_files import InferenceError
from engine.runtime.provenance import remote_provenance
from engine.runtime.whole_characters import TextTail

logger = logging.getLogger(__name__)

#: Retries of a 429, a 5xx or a dropped connection, by the openai client (with its backoff).
MAX_RETRIES = 2
#: A streamed answer is cut off at this many characters (a server that never stops).
MAX_ANSWER_CHARS = 100_000


def _guarded_socket(host, port, timeout, socket_options) -> socket.socket:
    """A socket connected by ``connect_checked`` (``EndpointAddressRefused`` passes through), with
    ``socket_options`` and ``TCP_NODELAY`` set; a failed connect raised as httpcore's error. Blocking:
    the async backend runs it in a worker thread."""
    try:
        sock = connect_checked(host, port, timeout)
    except TimeoutError as exc:
        raise httpcore2.ConnectTimeout(str(exc)) from exc
    except OSError as exc:
        raise httpcore2.ConnectError(str(exc)) from exc
    for option in socket_options or ():
        sock.setsockopt(*option)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


class GuardedBackend(httpcore2.SyncBackend):
    """httpcore's network backend with every TCP connection made by ``connect_checked``."""

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        return httpcore2._backends.sync.SyncStream(_guarded_socket(host, port, timeout, socket_options))


@functools.cache
def _tls() -> ssl.SSLContext:
    """The TLS settings of every call to a chat server (httpx's default certificates):
    made once per process. Made per client, they cost 20 ms of CPU for each answer (the certificates are
    read and parsed each time), on the event loop of an ASGI worker too; a context is safe to share
    between connections and threads."""
    return httpx2.create_ssl_context()


def guarded_http_client(timeout: float) -> httpx2.Client:
    """An httpx client whose connections obey the endpoint rule, with no environment proxies and no
    redirects (a redirect could point anywhere)."""
    transport = httpx2.HTTPTransport(verify=_tls(), trust_env=False)
    transport._pool._network_backend = GuardedBackend()  # noqa: SLF001 - httpx takes no backend argument
    return httpx2.Client(transport=transport, trust_env=False, follow_redirects=False, timeout=timeout)


class GuardedAsyncBackend(AnyIOBackend):
    """``GuardedBackend`` for the event loop: the checked connection is made in a worker thread (name
    lookup and connect block), then handed to the loop as an anyio socket stream."""

    async def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        sock = await anyio.to_thread.run_sync(_guarded_socket, host, port, timeout, socket_options)
        sock.settimeout(None)
        return AnyIOStream(await anyio.abc.SocketStream.from_socket(sock))


def guarded_async_http_client(timeout: float) -> httpx2.AsyncClient:
    """``guarded_http_client`` for the event loop."""
    transport = httpx2.AsyncHTTPTransport(verify=_tls(), trust_env=False)
    transport._pool._network_backend = GuardedAsyncBackend()  # noqa: SLF001 - as guarded_http_client
    return httpx2.AsyncClient(transport=transport, trust_env=False, follow_redirects=False, timeout=timeout)


@dataclass(frozen=True)
class RemoteChat:
    """A chat model on an OpenAI-compatible server.

    ``base_url`` ends before ``/chat/completions`` (e.g. ``http://127.0.0.1:8080/v1``). The key comes
    from the environment variable ``api_key_env`` or the file ``api_key_file`` (first line), whichever
    is named; a server that needs none gets a placeholder. Prices are per million tokens (input,
    output), in whatever currency the owner uses; ``timeout`` is in seconds, for the whole answer.
    """

    base_url: str
    model: str
    system_prompt: str = ""
    decoding: Decoding = field(default_factory=Decoding)
    timeout: float = 60.0
    api_key_env: str = ""
    api_key_file: str = ""
    price_input_per_million: float | None = None
    price_output_per_million: float | None = None
    name: str = ""

    def cost(self, input_tokens: int | None, output_tokens: int | None) -> float | None:
        """Cost of one answer from its token counts: tokens / 1e6 x price, input plus output; None when a
        price or a count is missing."""
        if None in (self.price_input_per_million, self.price_output_per_million, input_tokens, output_tokens):
            return None
        return (
            input_tokens * self.price_input_per_million + output_tokens * self.price_output_per_million
        ) / 1_000_000


def read_api_key(api_key_env: str = "", api_key_file: str = "") -> str | None:
    """The API key named by an environment variable or a file (its first line), or None when neither is
    named.

    Raises:
        InferenceError: the variable is unset or empty, or the file cannot be read or is empty; the
            message names the variable or says "the key file", never a value.
    """
    if api_key_env:
        value = os.environ.get(api_key_env, "").strip()
        if not value:
            raise InferenceError(f"the API key variable {api_key_env} is not set on the server")
        return value
    if api_key_file:
        try:
            value = Path(api_key_file).read_text(encoding="utf-8").splitlines()[0].strip()
        except (OSError, UnicodeError, IndexError):
            value = ""
        if not value:
            raise InferenceError("the API key file named for this model cannot be read or is empty")
        return value
    return None


def _client_settings(remote: RemoteChat) -> dict:
    """What both clients are made with: the checked base URL, the key read now, the timeout, retries."""
    check_endpoint_url(remote.base_url)
    key = read_api_key(remote.api_key_env, remote.api_key_file)
    return {
        "api_key": key or "none",
        "base_url": remote.base_url,
        "timeout": remote.timeout,
        "max_retries": MAX_RETRIES,
    }


def _client(remote: RemoteChat) -> openai.OpenAI:
    return openai.OpenAI(**_client_settings(remote), http_client=guarded_http_client(remote.timeout))


def _async_client(remote: RemoteChat) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(
        **_client_settings(remote), http_client=guarded_async_http_client(remote.timeout)
    )


def _explain(exc: Exception) -> InferenceError:
    """A user-facing error for what the openai client raised: the status and what it means, never the
    server's own text (it may quote the key or the prompt)."""
    if isinstance(exc, InferenceError):  # said already (an error event in the stream)
        return exc
    cause = exc
    while cause is not None:
        if isinstance(cause, EndpointAddressRefused):
            return cause
        cause = cause.__cause__ or cause.__context__
    if isinstance(exc, openai.AuthenticationError):
        return InferenceError(
            "the chat server answered 401 unauthorized: check the API key the operator named"
        )
    if isinstance(exc, openai.PermissionDeniedError):
        return InferenceError("the chat server answered 403 forbidden for this key or model")
    if isinstance(exc, openai.NotFoundError):
        return InferenceError("the chat server answered 404: check the base URL and the model name")
    if isinstance(exc, openai.RateLimitError):
        return InferenceError(f"the chat server answered 429 too many requests, {MAX_RETRIES + 1} times")
    if isinstance(exc, openai.APITimeoutError):
        return InferenceError("the chat server did not answer in time")
    if isinstance(exc, openai.APIStatusError):
        return InferenceError(f"the chat server answered HTTP {exc.status_code}")
    if isinstance(exc, openai.APIConnectionError):
        return InferenceError("the chat server could not be reached")
    # Mid-answer, the lines are read from the HTTP response itself (``_Reading.take``): its errors are
    # httpx's, said as the client says them.
    if isinstance(exc, httpx2.TimeoutException):
        return InferenceError("the chat server did not answer in time")
    if isinstance(exc, httpx2.TransportError):
        return InferenceError("the chat server could not be reached")
    return InferenceError(f"the chat server's answer could not be read ({type(exc).__name__})")


def _with_system_prompt(remote: RemoteChat, messages: list[dict]) -> list[dict]:
    """``messages`` with the model's system prompt first: as the system message, or before the
    conversation's own system message (a red-teaming passage), separated by a blank line."""
    if not remote.system_prompt or not messages:
        return list(messages)
    if messages[0]["role"] != "system":
        return [{"role": "system", "content": remote.system_prompt}, *messages]
    first = {"role": "system", "content": f"{remote.system_prompt}\n\n{messages[0]['content']}"}
    return [first, *messages[1:]]


class _Reading:
    """What has come of one remote answer so far, chunk by chunk; the blocking and the async reader of
    ``RemoteChatStream`` share it, so both end an answer the same way."""

    def __init__(self, remote: RemoteChat):
        self.remote = remote
        self.started = time.perf_counter()
        self.deadline = self.started + remote.timeout
        self.text, self.first_token_ms, self.finish, self.error = "", None, None, ""
        self.usage: dict = {}
        self.fingerprint: str | None = None  # the server's system_fingerprint, when it sends one
        self.done = False
        # A server that decoded a character cut in two sends U+FFFD for it: held back, dropped at the end.
        self.tail = TextTail()

    def take(self, line: str) -> str:
        """The whole characters one line of the server's event stream adds to the answer ("" for none):
        a ``data:`` line's ``chat.completion.chunk``, its usage and finish reason noted; ``data: [DONE]``
        sets ``done``; comments, blank and ``event:`` lines add nothing.

        Read by hand, one ``json.loads`` a line, and not by the ``openai`` client's stream objects: those
        cost about 100 microseconds of CPU a chunk against 10 (a pydantic object each), and a worker
        carrying hundreds of answers at 50 tokens a second reads thousands of chunks a second
        (docs/serving.md, "Many streams per worker"). The request, its key, retries and HTTP errors
        stay the client's.

        Raises:
            ValueError: a ``data:`` line that is not a JSON object (garbage from the server).
            InferenceError: the server sent an error event instead of a chunk.
        """
        if not line.startswith("data:"):
            return ""
        data = line[5:].strip()
        if data == "[DONE]":
            self.done = True
            return ""
        chunk = json.loads(data)
        if not isinstance(chunk, dict):
            raise ValueError("a chunk that is not a JSON object")
        if chunk.get("error") is not None:
            raise InferenceError("the chat server sent an error instead of the rest of the answer")
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        if isinstance(chunk.get("system_fingerprint"), str) and self.fingerprint is None:
            self.fingerprint = chunk["system_fingerprint"][:200]
        out = ""
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta") or {}
            piece = delta.get("content") or ""
            if choice.get("finish_reason"):
                self.finish = choice["finish_reason"]
            if piece:
                if not isinstance(piece, str):
                    raise ValueError("a chunk whose content is not text")
                if self.first_token_ms is None:
                    self.first_token_ms = (time.perf_counter() - self.started) * 1000
                out += self.tail.feed(piece)
                self.text = self.tail.text
        return out

    def over(self) -> bool:
        """True when the answer ran past its time or ``MAX_ANSWER_CHARS``: it ends with ``timeout``."""
        if time.perf_counter() > self.deadline or len(self.text) > MAX_ANSWER_CHARS:
            self.finish, self.error = "timeout", "the answer did not end within the time limit"
            return True
        return False

    def left(self) -> None:
        """The reader left: unless the server had ended the answer, it is cut short."""
        self.finish = self.finish or "cut_short"

    def broke(self, exc: Exception) -> None:
        """The stream failed: with text so far, kept (finish ``error``); with none, raised.

        Raises:
            InferenceError: ``_explain(exc)``, when nothing came before.
        """
        if not self.text:
            raise _explain(exc) from None
        self.finish, self.error = "error", f"the stream broke off: {_explain(exc)}"

    def ended(self) -> None:
        """The server's stream ended: one without a finish reason is an ``error``."""
        if self.finish is None:
            self.finish, self.error = "error", self.error or "the stream ended without a finish reason"

    def generation(self) -> Generation:
        remote = self.remote
        input_tokens = _count(self.usage.get("prompt_tokens"))
        output_tokens = _count(self.usage.get("completion_tokens"))
        return Generation(
            text=self.text,
            finish_reason=self.finish or "error",
            model=remote.name or remote.model,
            decoding=remote.decoding.as_dict(),
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            first_token_ms=self.first_token_ms,
            latency_ms=(time.perf_counter() - self.started) * 1000,
            seed=remote.decoding.seed,
            cost=remote.cost(input_tokens, output_tokens),
            error=self.error,
            provenance=remote_provenance(remote.model, self.fingerprint),
        )


def _failed_to_start(remote: RemoteChat, exc: Exception) -> InferenceError:
    logger.warning("chat server %s failed: %s", remote.name or remote.model, type(exc).__name__)
    return _explain(exc)


class RemoteChatStream(AnswerStream):
    """The pieces of a remote answer as they arrive; ``generation`` once ended (same contract as
    ``runtime.generative.ChatStream``), read with ``for`` (the ``openai`` client) or ``async for``
    (``openai.AsyncOpenAI``: no thread held while the server answers).

    A stream that breaks after some text (garbage, a dropped connection, the timeout) ends without
    raising: the partial answer is kept with finish reason ``error`` or ``timeout`` and ``error`` says
    what happened. An error before any text raises ``InferenceError``. A trailing U+FFFD (a character the
    server cut and decoded) is held back until text follows it, and left out if none does
    (``runtime.whole_characters.TextTail``).
    """

    def __init__(self, remote: RemoteChat, messages: list[dict]):
        self.remote, self.messages = remote, messages
        super().__init__()

    def _request(self) -> dict:
        remote, decoding = self.remote, self.remote.decoding
        messages = _with_system_prompt(remote, self.messages)
        request = {
            "model": remote.model,
            "messages": messages,
            "temperature": decoding.temperature,
            "top_p": decoding.top_p,
            "max_tokens": decoding.max_new_tokens,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if decoding.stop:
            request["stop"] = list(decoding.stop)
        if decoding.seed is not None:
            request["seed"] = decoding.seed
        return request

    def _run(self) -> Iterator[str]:
        reading = _Reading(self.remote)
        client = _client(self.remote)
        try:
            try:
                opened = client.chat.completions.with_streaming_response.create(**self._request())
                response = opened.__enter__()
            except Exception as exc:  # noqa: BLE001 - every failure becomes a clear InferenceError
                raise _failed_to_start(self.remote, exc) from None
            try:
                for line in response.http_response.iter_lines():
                    whole = reading.take(line)
                    if whole:
                        yield whole
                    if reading.done or reading.over():
                        break
            except GeneratorExit:
                reading.left()
                raise
            except Exception as exc:  # noqa: BLE001 - a stream that breaks keeps what came
                reading.broke(exc)
            finally:
                _quietly_sync(opened)
            reading.ended()
        finally:
            client.close()
            self.generation = reading.generation()

    async def _arun(self) -> AsyncIterator[str]:
        reading = _Reading(self.remote)
        client = _async_client(self.remote)
        try:
            try:
                opened = client.chat.completions.with_streaming_response.create(**self._request())
                response = await opened.__aenter__()
            except Exception as exc:  # noqa: BLE001 - as _run
                raise _failed_to_start(self.remote, exc) from None
            try:
                async for line in response.http_response.aiter_lines():
                    whole = reading.take(line)
                    if whole:
                        yield whole
                    if reading.done or reading.over():
                        break
            except (GeneratorExit, asyncio.CancelledError):  # the reader left, or its request was cancelled
                reading.left()
                raise
            except Exception as exc:  # noqa: BLE001 - as _run
                reading.broke(exc)
            finally:
                await _quietly(opened.__aexit__(None, None, None))
            reading.ended()
        finally:
            self.generation = reading.generation()
            await _quietly(client.close())


def _count(value) -> int | None:
    """A token count from the server's usage: a whole number of at least 0, else None (not known)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _quietly_sync(opened) -> None:
    """Close a streamed response, whatever closing raises (as ``_quietly``)."""
    try:
        opened.__exit__(None, None, None)
    except Exception:  # noqa: BLE001
        logger.debug("closing a chat server's stream failed", exc_info=True)


async def _quietly(closing) -> None:
    """Await ``closing`` (a connection's close), whatever it raises: the answer is recorded already, and
    a reader who left may have left a broken connection behind."""
    try:
        await closing
    except Exception:  # noqa: BLE001
        logger.debug("closing a chat server's stream failed", exc_info=True)


def stream_remote(remote: RemoteChat, messages: Sequence[dict]) -> RemoteChatStream:
    """Ask ``remote`` to answer ``messages`` (last message the user's), streaming.

    Raises (on the first ``next``): ``EndpointAddressRefused`` (the URL breaks the endpoint rule),
    ``InferenceError`` (no key where one is named, 401/403/404, 429 or 5xx after ``MAX_RETRIES``
    retries, no answer in time, or a malformed conversation).
    """
    return RemoteChatStream(remote, check_messages(messages))


def generate_remote(remote: RemoteChat, messages: Sequence[dict]) -> Generation:
    """The whole remote answer at once; same errors as ``stream_remote``."""
    return stream_remote(remote, messages).drain()


#: The option letters of a remote multiple choice (at most 10 options).
LETTERS = "ABCDEFGHIJ"
#: A remote multiple choice asks for at most this many tokens (the letter, and "." or a space).
CHOICE_TOKENS = 2
#: ... and for the first token's this many likeliest alternatives (OpenAI's maximum).
TOP_LOGPROBS = 20


def _lettered(messages: Sequence[dict], options: Sequence[str]) -> list[dict]:
    """The question's last user message with the options lettered under it and the instruction to
    answer with the letter only."""
    lines = "\n".join(f"{LETTERS[i]}. {option}" for i, option in enumerate(options))
    letters = ", ".join(LETTERS[: len(options)])
    last = messages[-1]
    content = f"{last['content']}\n\n{lines}\n\nAnswer with the letter of the right option only ({letters})."
    return [*messages[:-1], {"role": last["role"], "content": content}]


def _letter_of(text: str, letters: str) -> int | None:
    """The index of the first option letter ``text`` stands for ("B", " b", "B.", "(B)"), or None."""
    token = text.strip().strip("().:*").upper()
    return letters.index(token) if len(token) == 1 and token in letters else None


def choose_remote(remote: RemoteChat, messages: Sequence[dict], options: Sequence[str]) -> ChoiceScores:
    """Which of ``options`` the remote model picks as its answer to ``messages``: the options are
    lettered (A, B, ...) under the last message, and the model answers one letter (greedy, at most 2
    tokens). With the server's log-probabilities (``logprobs``, ``top_logprobs`` 20), the pick is the
    letter with the highest log-probability among the first token's alternatives, and each option's
    score is its letter's log-probability (None when not among them); a server that refuses ``logprobs``
    (HTTP 400) is asked again without, once, and the pick is the letter its answer names (every score
    None). With log-probabilities that name no letter, the answer's letter is the pick too.

    The scores are the letters' log-probabilities (natural log), not the options' likelihoods:
    ``log_likelihoods`` and ``normalised`` both hold them, and ``picked_unnormalised`` is ``picked``. An
    unknown score is None rather than ``-inf``: the letter's probability is below the 20th alternative's
    but not known, and the scores are stored as JSON (``Example.metadata``), which has no infinity.

    Returns:
        ``runtime.generative.ChoiceScores`` with ``method`` ``letter_logprobs`` or ``letter``.

    Raises:
        EndpointAddressRefused: the URL breaks the endpoint rule.
        InferenceError: fewer than two or more than 10 options, a malformed conversation, the server
            failing (as ``stream_remote``: no key, 401/403/404, 429 or 5xx after the retries, no answer
            in time), or an answer that names no option's letter ("the model named no option's letter
            (A, B, C) in its answer").
    """
    if not 2 <= len(options) <= len(LETTERS):
        raise InferenceError(f"multiple choice takes 2 to {len(LETTERS)} options")
    letters = LETTERS[: len(options)]
    named = ", ".join(letters)
    request = {
        "model": remote.model,
        "messages": _with_system_prompt(remote, _lettered(check_messages(messages), options)),
        "temperature": 0.0,
        "max_tokens": CHOICE_TOKENS,
        "logprobs": True,
        "top_logprobs": TOP_LOGPROBS,
    }
    client = _client(remote)
    try:
        try:
            response = client.chat.completions.create(**request)
        except openai.BadRequestError:  # a server without log-probabilities: the letter alone, once
            request.pop("logprobs"), request.pop("top_logprobs")
            response = client.chat.completions.create(**request)
        choice = response.choices[0]
        text = choice.message.content or ""
        alternatives = []
        content = getattr(getattr(choice, "logprobs", None), "content", None) or []
        if content:
            alternatives = [(t.token, t.logprob) for t in (content[0].top_logprobs or [])] or [
                (content[0].token, content[0].logprob)
            ]
    except openai.OpenAIError as exc:
        logger.warning("chat server %s failed: %s", remote.name or remote.model, type(exc).__name__)
        raise _explain(exc) from None
    except (AttributeError, IndexError, TypeError) as exc:
        raise InferenceError(f"the chat server's answer could not be read ({type(exc).__name__})") from None
    finally:
        client.close()
    # None, not -inf, for an unknown score: the scores are stored as JSON, which has no infinity.
    scores: list[float | None] = [None] * len(options)
    for token, logprob in alternatives:
        index = _letter_of(token or "", letters)
        if index is not None and logprob is not None and (scores[index] is None or logprob > scores[index]):
            scores[index] = float(logprob)
    if any(score is not None for score in scores):
        known = [i for i, score in enumerate(scores) if score is not None]
        picked, method = max(known, key=lambda i: scores[i]), "letter_logprobs"
    else:
        picked = _letter_of(text[:3], letters)
        if picked is None:
            found = re.search(rf"\b([{letters}])\b", text.upper())
            picked = letters.index(found.group(1)) if found else None
        if picked is None:
            raise InferenceError(f"the model named no option's letter ({named}) in its answer")
        method = "letter"
    return ChoiceScores(
        log_likelihoods=tuple(scores),
        normalised=tuple(scores),
        picked=picked,
        picked_unnormalised=picked,
        method=method,
    )
