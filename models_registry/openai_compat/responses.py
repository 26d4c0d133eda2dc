"""What ``POST /v1/chat/completions`` answers: a ``chat.completion`` object, or server-sent
``chat.completion.chunk`` events, from a model's ``AnswerStream`` (``generative.chat_stream``).

The stream (https://platform.openai.com/docs/api-reference/chat-streaming) is ``data: <chunk JSON>``
events: the first with ``delta.role`` ``assistant``, one per piece of the answer with
``delta.content``, one with the ``finish_reason`` and an empty delta, with
``stream_options.include_usage`` one more with ``choices: []`` and the ``usage`` (every other chunk then
has ``"usage": null``), and ``data: [DONE]`` last. While the answer waits for a generation slot
(``runtime.slots``) a comment line ``: waiting, N ahead`` goes out about once a second: clients skip
comments, and the write notices a client that left. A model that breaks mid-answer ends the stream
with ``data: {"error": {...}}`` (the ``openai`` client raises ``APIError`` with it) and no ``[DONE]``.

Finish reasons are OpenAI's: ``stop`` (end of turn or a stop sequence) and ``length`` (``max_tokens``,
or the model's stored ``timeout`` for a whole answer, which cuts it short the same way). A runner's
``cut_short`` (the reader left before the end) maps to ``length`` too, an answer that did not end as the
model meant it to; a client sees it only if it reads on after leaving, which none does.
"""

from __future__ import annotations

import itertools
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Iterable, Iterator

from engine.runtime.generative import AnswerStream, Generation, PromptTooLong, Waiting
from engine.runtime.model_files import InferenceError
from engine.runtime.slots import QueueFull

from .errors import SERVER_ERROR, OpenAIError, model_failed

logger = logging.getLogger(__name__)

#: The runner's finish reasons (``runtime.generative.FINISH_REASONS``) as OpenAI names them; ``error`` ends
#: the answer with an error instead.
FINISH_REASONS = {"stop": "stop", "length": "length", "timeout": "length", "cut_short": "length"}
BUSY = "The model is busy answering others; try again in a while."


def completion_id() -> str:
    """A fresh ``chatcmpl-<32 hex>`` id."""
    return f"chatcmpl-{uuid.uuid4().hex}"


def usage_of(generation: Generation) -> dict:
    """``{"prompt_tokens", "completion_tokens", "total_tokens"}``: the model's own tokens, the prompt
    counted after its chat template and stored system prompt."""
    prompt, completion = generation.input_tokens or 0, generation.output_tokens or 0
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def start(stream: AnswerStream) -> list[str]:
    """The stream's first piece (a ``Waiting`` one if the answer is queued), or [] for an empty answer;
    pulled before the response begins, so a prompt too long or a model that cannot start is an HTTP
    error, not a broken stream.

    Raises:
        OpenAIError: 400 ``context_length_exceeded`` (``PromptTooLong``); 500 ``model_error`` for a
            model that fails (logged; the caller reads no detail of the server).
        QueueFull: the line for a generation slot is full (503, ``models_registry.queue_full``).
    """
    try:
        return [next(stream)]
    except StopIteration:
        return []
    except InferenceError as exc:
        raise _not_started(exc) from None


async def astart(stream: AnswerStream) -> list[str]:
    """``start`` for a stream read with ``async for`` (an ASGI worker); the same errors."""
    try:
        return [await stream.__anext__()]
    except StopAsyncIteration:
        return []
    except InferenceError as exc:
        raise _not_started(exc) from None


def _not_started(exc: InferenceError) -> Exception:
    if isinstance(exc, QueueFull):
        return exc
    if isinstance(exc, PromptTooLong):
        return OpenAIError(
            400,
            f"This model's maximum context length is {exc.limit:,} tokens. However, your messages "
            f"resulted in {exc.tokens:,} tokens and {exc.max_new_tokens:,} are asked for the answer. "
            "Please reduce the length of the messages or of max_tokens.",
            param="messages",
            code="context_length_exceeded",
        )
    logger.error("chat completion: the model failed before answering", exc_info=exc)
    return model_failed()


def _busy(generation: Generation) -> bool:
    """The answer never got a generation slot (the queue's wait ran out): nothing was generated."""
    return generation.finish_reason == "timeout" and bool(generation.error) and not generation.text


def completion(stream: AnswerStream, started: list[str], *, model_id: str) -> dict:
    """The whole answer as a ``chat.completion`` object (the stream read to its end, then closed).

    Raises:
        OpenAIError: 500 ``model_error`` when the model breaks; 503 ``server_overloaded`` when no
            generation slot came free in time.
    """
    try:
        for _ in itertools.chain(started, stream):
            pass
    except InferenceError:
        logger.exception("chat completion: the model failed while answering")
        raise model_failed() from None
    finally:
        stream.close()
    generation = stream.generation
    if generation is None or generation.finish_reason == "error":
        raise model_failed()
    if _busy(generation):
        raise OpenAIError(
            503, BUSY, type=SERVER_ERROR, code="server_overloaded", headers={"Retry-After": "30"}
        )
    return {
        "id": completion_id(),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model_id,
        "system_fingerprint": None,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": generation.text, "refusal": None},
                "logprobs": None,
                "finish_reason": FINISH_REASONS.get(generation.finish_reason, "stop"),
            }
        ],
        "usage": usage_of(generation),
    }


class StopTrimmer:
    """What of a growing answer may be sent without ever sending a stop sequence or what follows it.

    The model's runner stops after a stop sequence and cuts it from the final text, but its pieces
    come before it knows: so the last ``len(longest stop) - 1`` characters are held back until the
    next piece shows whether a stop sequence begins there.
    """

    def __init__(self, stops: Iterable[str]):
        self.stops = tuple(stops)
        self.hold = max((len(s) for s in self.stops), default=1) - 1
        self.text, self.sent, self.stopped = "", 0, False

    def feed(self, piece: str) -> str:
        """Add ``piece``; returns the text that may now be sent ("" once a stop sequence came)."""
        if self.stopped:
            return ""
        self.text += piece
        # A stop sequence cannot start before what was sent: it would have been whole already then.
        found = [i for i in (self.text.find(s, self.sent) for s in self.stops) if i >= 0]
        end = min(found) if found else len(self.text) - self.hold
        self.stopped = bool(found)
        if end <= self.sent:
            return ""
        out, self.sent = self.text[self.sent : end], end
        return out

    def rest(self, final_text: str) -> str:
        """What of ``final_text`` (the runner's answer, cut at its stop sequence) is not sent yet."""
        sent = self.text[: self.sent]
        return final_text[len(sent) :] if final_text.startswith(sent) else ""


def _data(payload) -> str:
    data = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False)
    return f"data: {data}\n\n"


class _Chunks:
    """The ``chat.completion.chunk`` events of one answer, the blocking and the async loop alike."""

    def __init__(self, *, model_id: str, stops: Iterable[str], include_usage: bool):
        self.cid, self.created, self.model_id = completion_id(), int(time.time()), model_id
        self.usage_field = {"usage": None} if include_usage else {}
        self.include_usage = include_usage
        self.trimmer = StopTrimmer(stops)

    def chunk(self, delta: dict, finish: str | None = None) -> dict:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return {
            "id": self.cid,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model_id,
            "system_fingerprint": None,
            "choices": [choice],
            **self.usage_field,
        }

    def first(self) -> str:
        return _data(self.chunk({"role": "assistant", "content": ""}))

    def piece(self, piece: str) -> str | None:
        """The event of one piece of the answer (a comment while it waits in line), or None."""
        if isinstance(piece, Waiting):
            return f": waiting, {piece.ahead} ahead\n\n"
        text = self.trimmer.feed(piece)
        return _data(self.chunk({"content": text})) if text else None

    @staticmethod
    def broke() -> str:
        logger.exception("chat completion (streamed): the model failed while answering")
        return _data(model_failed().body())

    def ended(self, generation: Generation | None) -> Iterator[str]:
        """The last events once the stream is closed: the rest of the text, the finish reason, the usage
        and ``[DONE]``; or the error event of an answer that failed or never got a slot."""
        if generation is None or generation.finish_reason == "error":
            yield _data(model_failed().body())
            return
        if _busy(generation):
            yield _data(OpenAIError(503, BUSY, type=SERVER_ERROR, code="server_overloaded").body())
            return
        rest = self.trimmer.rest(generation.text)
        if rest:
            yield _data(self.chunk({"content": rest}))
        yield _data(self.chunk({}, FINISH_REASONS.get(generation.finish_reason, "stop")))
        if self.include_usage:
            yield _data({**self.chunk({}), "choices": [], "usage": usage_of(generation)})
        yield _data("[DONE]")


def events(
    stream: AnswerStream,
    started: list[str],
    *,
    model_id: str,
    stops: Iterable[str] = (),
    include_usage: bool = False,
) -> Iterator[str]:
    """The server-sent events of the answer (module docstring). Closing the iterator (the client left)
    closes ``stream``, which stops the generation at its next token."""
    chunks = _Chunks(model_id=model_id, stops=stops, include_usage=include_usage)
    try:
        yield chunks.first()
        for piece in itertools.chain(started, stream):
            said = chunks.piece(piece)
            if said:
                yield said
    except InferenceError:
        yield chunks.broke()
        return
    finally:
        stream.close()
    yield from chunks.ended(stream.generation)


async def aevents(
    stream: AnswerStream,
    started: list[str],
    *,
    model_id: str,
    stops: Iterable[str] = (),
    include_usage: bool = False,
) -> AsyncIterator[str]:
    """``events`` for an ASGI worker: the answer read with ``async for`` (a remote one holds no
    thread)."""
    chunks = _Chunks(model_id=model_id, stops=stops, include_usage=include_usage)
    try:
        yield chunks.first()
        for piece in started:
            said = chunks.piece(piece)
            if said:
                yield said
        async for piece in stream:
            said = chunks.piece(piece)
            if said:
                yield said
    except InferenceError:
        yield chunks.broke()
        return
    finally:
        await stream.aclose()
    for said in chunks.ended(stream.generation):
        yield said
