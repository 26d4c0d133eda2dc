"""Server-sent events for a turn's answer, shared by the red-teaming page and the API.

The stream (``text/event-stream``, https://html.spec.whatwg.org/multipage/server-sent-events.html) is:

* ``event: turn`` once first, ``data`` = ``{"turn": index, "conversation": id}``;
* ``event: queued`` while the answer waits for its turn on a busy local model (``runtime.slots``),
  about once a second, ``data`` = ``{"ahead": n}``, the answers before it;
* ``event: token`` per piece of the answer, ``data`` = ``{"text": piece}`` (JSON, so newlines and any
  character travel safely); pieces that come within ``GATHER_SECONDS`` (0.1 s) of the last event are
  sent together in the next;
* ``event: done`` last, ``data`` = the stored turn (``turn_payload``): status, the whole answer, its
  finish reason, error and generation record. A broken or timed-out answer still ends with ``done``.

A client that leaves early closes the generator; ``TurnStream`` then stops the model and stores what came,
with finish reason ``cut_short``.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Iterator

from asgiref.sync import sync_to_async
from django.http import StreamingHttpResponse

from annotation.models import Turn
from core.streaming import event_stream_response, served_async
from models_registry.serving import Waiting

from .conversations import TurnStream


def event(name: str, data: dict) -> str:
    """One server-sent event: ``event: name`` and ``data:`` the JSON of ``data`` (one line: JSON escapes
    newlines), ended by a blank line."""
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def turn_payload(turn: Turn) -> dict:
    """A turn as the API and the stream's ``done`` event give it: ``{"index", "prompt", "answer",
    "status", "finish_reason", "error", "generation"}`` (``generation`` the stored record, or {})."""
    generation = turn.generation or {}
    return {
        "index": turn.index,
        "prompt": turn.prompt,
        "answer": turn.answer,
        "status": turn.status,
        "finish_reason": generation.get("finish_reason"),
        "error": turn.error,
        "generation": generation,
    }


#: Pieces that come within this many seconds of the last ``token`` event are sent together in the next
#: one: a server streaming 50 tokens a second gives the reader 10 events a second, not 50 (each event is
#: a write of its own, the larger part of a worker's CPU per stream; docs/serving.md, "Many streams per
#: worker"). The first piece, and one after a pause, go at once.
GATHER_SECONDS = 0.1


class _Gathered:
    """The answer's events, its pieces gathered per ``GATHER_SECONDS`` (the blocking and the async loop
    alike)."""

    def __init__(self):
        self.held, self.sent_at = "", float("-inf")

    def piece(self, piece: str) -> str | None:
        """The event to send for ``piece`` now, or None while it is held."""
        if isinstance(piece, Waiting):  # the model is answering others first: said at once
            return self.rest() + event("queued", {"ahead": piece.ahead})
        self.held += piece
        now = time.monotonic()
        if not self.held or now - self.sent_at < GATHER_SECONDS:
            return None
        self.sent_at = now
        return self.rest()

    def rest(self) -> str:
        """The ``token`` event of what is held ("" for nothing)."""
        text, self.held = self.held, ""
        return event("token", {"text": text}) if text else ""


def _events(stream: TurnStream) -> Iterator[str]:
    turn = stream.turn
    gathered = _Gathered()
    yield event("turn", {"turn": turn.index, "conversation": turn.conversation_id})
    try:
        for piece in stream:
            said = gathered.piece(piece)
            if said:
                yield said
    finally:
        stream.close()
    turn.refresh_from_db()
    yield gathered.rest() + event("done", turn_payload(turn))


async def _aevents(stream: TurnStream) -> AsyncIterator[str]:
    """``_events`` for an ASGI worker: the answer read with ``async for``, the database read in the
    request's thread."""
    turn = stream.turn
    gathered = _Gathered()
    yield event("turn", {"turn": turn.index, "conversation": turn.conversation_id})
    try:
        async for piece in stream:
            said = gathered.piece(piece)
            if said:
                yield said
    finally:
        await stream.aclose()
    await sync_to_async(turn.refresh_from_db)()
    yield gathered.rest() + event("done", turn_payload(turn))


def sse_response(request, stream: TurnStream) -> StreamingHttpResponse:
    """The ``text/event-stream`` response of ``stream``, streamed by whichever server handles
    ``request`` (``core.streaming``)."""
    return event_stream_response(_aevents(stream) if served_async(request) else _events(stream))
