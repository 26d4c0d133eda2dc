"""Server-sent events for a turn's answer, shared by the red-teaming page and the API.

The stream (``text/event-stream``, https://html.spec.whatwg.org/multipage/server-sent-events.html) is:

* ``event: turn`` once first, ``data`` = ``{"turn": index, "conversation": id}``;
* ``event: queued`` while the answer waits for its turn on a busy local model (``runtime.slots``),
  about once a second, ``data`` = ``{"ahead": n}``, the answers before it;
* ``event: token`` per piece of the answer, ``data`` = ``{"text": piece}`` (JSON, so newlines and any
  character travel safely); pieces that come within ``GATHER_SECONDS`` (0.1 s) of the last event are
  sent together in the next (under an ASGI worker, the answer is read in gulps after each event:
  ``_apaced``, and ``_apaced_candidates`` side by side);
* ``event: done`` last, ``data`` = the stored turn (``turn_payload``): status, the whole answer, its
  finish reason, error and generation record. A broken or timed-out answer still ends with ``done``.

**Side by side.** The first message of a side-by-side conversation is answered by several models at
once, their events interleaved: ``event: turn`` carries ``"answers": k`` too; each ``token`` and
``queued`` event carries ``"slot"`` (0 for answer A); ``done`` is ``{"answers": [turn_payload of each answer, slot order]}``, the
records without the models' names (``NAMING_KEYS``).

A client that leaves early closes the generator; ``TurnStream`` then stops the model and stores what came,
with finish reason ``cut_short``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import aclosing

from asgiref.sync import sync_to_async
from django.http import StreamingHttpResponse

from annotation.models import Turn
from core.streaming import event_stream_response, served_async
from models_registry.serving import Waiting

from .conversations import CandidateStreams, TurnStream, answering_model


def event(name: str, data: dict) -> str:
    """One server-sent event: ``event: name`` and ``data:`` the JSON of ``data`` (one line: JSON escapes
    newlines), ended by a blank line."""
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


#: What a side-by-side answer's record keeps while its conversation is open: the models stay anonymous to
#: their writer until the conversation is judged, and the rest of a record would tell them apart (the
#: decoding settings, the prompt's tokens with a model's own system prompt, the files' provenance).
ANONYMOUS_KEYS = ("finish_reason",)


def turn_payload(turn: Turn, *, anonymous: bool = False) -> dict:
    """A turn as the API and the stream's ``done`` event give it: ``{"index", "prompt", "answer",
    "status", "finish_reason", "error", "generation"}`` (``generation`` the stored record, or {}); a
    side-by-side answer adds ``"answer_of": "A"`` (its letter) and ``"model"`` (its name; None while
    ``anonymous``). ``anonymous``: the record with ``ANONYMOUS_KEYS`` only."""
    generation = turn.generation or {}
    if anonymous:
        generation = {k: v for k, v in generation.items() if k in ANONYMOUS_KEYS}
    payload = {
        "index": turn.index,
        "prompt": turn.prompt,
        "answer": turn.answer,
        "status": turn.status,
        "finish_reason": generation.get("finish_reason"),
        "error": turn.error,
        "generation": generation,
    }
    if turn.slot is not None:
        payload["answer_of"] = turn.slot_letter
        payload["model"] = None if anonymous else answering_model(turn).name
    return payload


#: Pieces that come within this many seconds of the last ``token`` event are sent together in the next
#: one: a server streaming 50 tokens a second gives the reader 10 events a second, not 50 (each event is
#: a write of its own, the larger part of a worker's CPU per stream; docs/serving.md, "Many streams per
#: worker"). The first piece, and one after a pause, go at once.
GATHER_SECONDS = 0.1

#: Under an ASGI worker the answer is read in gulps (``_apaced``): a piece that took longer than this to
#: come had to be waited for (the connection held nothing more), so what is held goes out with it.
WAITED_SECONDS = 0.001

#: ... and what is held never waits longer than this for such a piece: a server that sends faster than
#: the worker reads never pauses, yet its reader sees the answer grow.
HELD_AT_MOST_SECONDS = 3 * GATHER_SECONDS


class _Gathered:
    """The answer's events, its pieces gathered per ``GATHER_SECONDS`` (the blocking and the async loop
    alike)."""

    def __init__(self, extra: dict | None = None):
        self.held, self.sent_at = "", float("-inf")
        self.extra = extra or {}  # added to every event's data: a side-by-side answer's slot

    def piece(self, piece: str) -> str | None:
        """The event to send for ``piece`` now, or None while it is held."""
        if isinstance(piece, Waiting):  # the model is answering others first: said at once
            return self.rest() + event("queued", {"ahead": piece.ahead, **self.extra})
        self.held += piece
        return self.due() or None

    def gulped(self, piece: str, waited: bool) -> str | None:
        """``piece`` for ``_apaced``: the event to send now, or None while it is held. What is held goes
        out with a piece that was ``waited`` for (the connection had nothing more), with the answer's
        first piece, and once it is ``HELD_AT_MOST_SECONDS`` old."""
        if isinstance(piece, Waiting):
            return self.piece(piece)
        self.held += piece
        now = time.monotonic()
        if waited or now - self.sent_at >= HELD_AT_MOST_SECONDS:
            return self.sent(now)
        return None

    def due(self) -> str:
        """The ``token`` event of what is held if ``GATHER_SECONDS`` have passed since the last one (""
        otherwise): for this answer's own piece, and when another answer's piece came, so that this one's
        held text does not wait for its own next piece."""
        now = time.monotonic()
        if not self.held or now - self.sent_at < GATHER_SECONDS:
            return ""
        self.sent_at = now
        return self.rest()

    def sent(self, now: float) -> str:
        """``rest``, noted as sent at ``now`` when there was something to send."""
        if self.held:
            self.sent_at = now
        return self.rest()

    def rest(self) -> str:
        """The ``token`` event of what is held ("" for nothing)."""
        text, self.held = self.held, ""
        return event("token", {"text": text, **self.extra}) if text else ""


async def _apaced(pieces: AsyncIterator, gathered: _Gathered) -> AsyncIterator[str]:
    """The events of ``pieces`` (an answer read on an event loop), read in gulps: after each ``token``
    event the reading pauses ``GATHER_SECONDS``, so the pieces the server sends meanwhile wait in the
    connection and are read with one wake-up and one read of the socket, not one each. A piece that had
    to be waited for ends the gulp (``_Gathered.gulped``). The first piece goes at once. One answer is
    ``_apaced_candidates``' rule with one slot.

    Why: at 50 tokens a second a worker woke and read once per token, and a read through the ``openai``
    client's HTTP stack costs tens of microseconds (docs/serving.md, "Many streams per worker"). The
    reader still gets about 10 events a second, as with ``GATHER_SECONDS`` alone."""

    async def in_slot_0():
        async for piece in pieces:
            yield 0, piece

    async with (
        aclosing(in_slot_0()) as slotted,
        aclosing(_apaced_candidates(slotted, {0: gathered})) as events,
    ):
        async for said in events:
            yield said


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
        async with aclosing(_apaced(stream, gathered)) as events:
            async for said in events:
                yield said
    finally:
        await stream.aclose()
    await sync_to_async(turn.refresh_from_db)()
    yield gathered.rest() + event("done", turn_payload(turn))


def _first_event(streams: CandidateStreams) -> str:
    first = streams.turn
    return event(
        "turn", {"turn": first.index, "conversation": first.conversation_id, "answers": len(streams.streams)}
    )


def _candidate_piece(gathered: dict[int, _Gathered], slot: int, piece: str) -> str | None:
    """The events to send for ``piece`` of the answer in ``slot`` (None while it is held). The answers'
    pieces come interleaved: each answer's are gathered on their own, and what another answer has held
    for ``GATHER_SECONDS`` goes first (its stream may have ended)."""
    said = "".join(g.due() for other, g in gathered.items() if other != slot)
    now = gathered.setdefault(slot, _Gathered({"slot": slot})).piece(piece)
    return (said + (now or "")) or None


def _candidate_done(streams: CandidateStreams) -> str:
    return event("done", {"answers": [turn_payload(t, anonymous=True) for t in streams.turns]})


def _candidate_events(streams: CandidateStreams) -> Iterator[str]:
    """The events of a side-by-side first message (module docstring, "Side by side")."""
    yield _first_event(streams)
    gathered: dict[int, _Gathered] = {}
    pieces = streams.pieces()
    try:
        for slot, piece in pieces:
            said = _candidate_piece(gathered, slot, piece)
            if said:
                yield said
    finally:
        pieces.close()
    for turn in streams.turns:
        turn.refresh_from_db()
    yield "".join(g.rest() for g in gathered.values()) + _candidate_done(streams)


async def _apaced_candidates(pieces: AsyncIterator, gathered: dict[int, _Gathered]) -> AsyncIterator[str]:
    """``_apaced`` for the answers of a side-by-side first message, read in turn (``serving.Together``)
    as ``(slot, piece)`` pairs: each answer's pieces are held on their own (``_Gathered.gulped``), and a
    piece that had to be waited for sends what every answer holds, since the others' pieces were held
    while it was awaited."""
    ready = time.monotonic()
    async for slot, piece in pieces:
        waited = time.monotonic() - ready > WAITED_SECONDS
        own = gathered.setdefault(slot, _Gathered({"slot": slot}))
        said = own.gulped(piece, waited) or ""
        if waited:
            now = time.monotonic()
            said = "".join(g.sent(now) for other, g in gathered.items() if other != slot) + said
        if said:
            yield said
            if not isinstance(piece, Waiting):
                await asyncio.sleep(GATHER_SECONDS)
        ready = time.monotonic()


async def _acandidate_events(streams: CandidateStreams) -> AsyncIterator[str]:
    """``_candidate_events`` for an ASGI worker, read in gulps (``_apaced_candidates``)."""
    yield _first_event(streams)
    gathered: dict[int, _Gathered] = {}
    pieces = streams.apieces()
    try:
        async with aclosing(_apaced_candidates(pieces, gathered)) as events:
            async for said in events:
                yield said
    finally:
        await pieces.aclose()
    for turn in streams.turns:
        await sync_to_async(turn.refresh_from_db)()
    yield "".join(g.rest() for g in gathered.values()) + _candidate_done(streams)


def sse_response(request, stream: TurnStream | CandidateStreams) -> StreamingHttpResponse:
    """The ``text/event-stream`` response of ``stream``, streamed by whichever server handles
    ``request`` (``core.streaming``)."""
    if isinstance(stream, CandidateStreams):
        events = _acandidate_events(stream) if served_async(request) else _candidate_events(stream)
    else:
        events = _aevents(stream) if served_async(request) else _events(stream)
    return event_stream_response(events)
