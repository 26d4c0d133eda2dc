"""Server-sent events for a turn's answer, shared by the red-teaming page and the API.

The stream (``text/event-stream``, https://html.spec.whatwg.org/multipage/server-sent-events.html) is:

* ``event: turn`` once first, ``data`` = ``{"turn": index, "conversation": id}``;
* ``event: queued`` while the answer waits for its turn on a busy local model (``runtime.slots``),
  about once a second, ``data`` = ``{"ahead": n}``, the answers before it;
* ``event: token`` per piece of the answer, ``data`` = ``{"text": piece}`` (JSON, so newlines and any
  character travel safely);
* ``event: done`` last, ``data`` = the stored turn (``turn_payload``): status, the whole answer, its
  finish reason, error and generation record. A broken or timed-out answer still ends with ``done``.

A client that leaves early closes the generator; ``TurnStream`` then stops the model and stores what came,
with finish reason ``cut_short``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from django.http import StreamingHttpResponse

from annotation.models import Turn
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


def _events(stream: TurnStream) -> Iterator[str]:
    turn = stream.turn
    yield event("turn", {"turn": turn.index, "conversation": turn.conversation_id})
    try:
        for piece in stream:
            if isinstance(piece, Waiting):  # the model is answering others first
                yield event("queued", {"ahead": piece.ahead})
            elif piece:
                yield event("token", {"text": piece})
    finally:
        stream.close()
    turn.refresh_from_db()
    yield event("done", turn_payload(turn))


def sse_response(stream: TurnStream) -> StreamingHttpResponse:
    """The ``text/event-stream`` response of ``stream`` (no caching, no proxy buffering)."""
    response = StreamingHttpResponse(_events(stream), content_type="text/event-stream; charset=utf-8")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response
