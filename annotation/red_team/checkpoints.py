"""The texts so far of the answers streaming on one event loop, written to their turns together.

A streamed answer writes its text so far to its turn every ``CHECKPOINT_SECONDS`` (5 s), so that a process
killed mid-answer leaves what came (``conversations.TurnStream``, ``end_lost_turn``). Written one answer at a
time, an ASGI worker carrying 50 streams made 10 writes a second, each a hop to a thread, a connection taken
from the pool and given back, and an UPDATE: 7% of the worker's busy time with 200 streams
(docs/serving.md, "Many streams per worker"). Here an answer only notes its text (``note``); the first note
of a batch starts a task that waits ``GATHER_SECONDS`` and writes every noted text in one UPDATE, in one
thread hop. A text is written at most ``CHECKPOINT_SECONDS + GATHER_SECONDS`` after it came.

Only turns still ``answering`` are written: an answer stored meanwhile (its stream ended, in another
thread) keeps its final text, as PostgreSQL evaluates the condition again on a row it waited for.
"""

from __future__ import annotations

import asyncio
import logging

from asgiref.sync import sync_to_async
from django.db import DatabaseError, connections
from django.utils import timezone

from annotation.models import Turn

logger = logging.getLogger(__name__)

#: How long the first note of a batch waits for the notes of other answers before the batch is written,
#: in seconds.
GATHER_SECONDS = 0.5

#: {event loop: {turn id: text so far}}, the notes not yet written.
_noted: dict[asyncio.AbstractEventLoop, dict[int, str]] = {}
#: The writing tasks, kept referenced until they end (the loop holds only weak references to tasks).
_writing: set[asyncio.Task] = set()


def note(turn_id: int, text: str) -> None:
    """Note ``text``, the answer so far of turn ``turn_id`` (``answering``), to be written with the others
    noted on this event loop within ``GATHER_SECONDS``. A later note of the same turn replaces an
    unwritten one. Called on the running event loop; never blocks, never touches the database.

    Raises:
        RuntimeError: no event loop is running in this thread.
    """
    loop = asyncio.get_running_loop()
    noted = _noted.setdefault(loop, {})
    first = not noted
    noted[turn_id] = text
    if first:
        task = loop.create_task(_write_soon(loop))
        _writing.add(task)
        task.add_done_callback(_writing.discard)


def forget(turn_id: int) -> None:
    """Drop an unwritten note of turn ``turn_id`` (its answer ended and is stored whole). Nothing when no
    event loop runs or nothing is noted."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    _noted.get(loop, {}).pop(turn_id, None)


async def _write_soon(loop: asyncio.AbstractEventLoop) -> None:
    await asyncio.sleep(GATHER_SECONDS)
    texts = _noted.pop(loop, {})
    if texts:
        await sync_to_async(_write_and_release, thread_sensitive=False)(texts)


def _write_and_release(texts: dict[int, str]) -> None:
    """``write``, then give the thread's database connection back (an ASGI stream holds none between
    pieces, ``core.streaming.without_database``)."""
    try:
        write(texts)
    finally:
        connections.close_all()


def write(texts: dict[int, str]) -> int:
    """Write each ``{turn id: text}`` to its turn's answer, with ``updated_at`` now, in one UPDATE, for the
    turns still ``answering``. Returns the number of turns written. A database error is logged and
    swallowed: the answers go on streaming, and their next checkpoint tries again."""
    now = timezone.now()
    turns = [Turn(pk=pk, answer=text, updated_at=now) for pk, text in texts.items()]
    try:
        return Turn.objects.filter(status=Turn.Status.ANSWERING).bulk_update(turns, ["answer", "updated_at"])
    except DatabaseError:
        logger.warning("writing %d streaming answers' text so far failed", len(turns), exc_info=True)
        return 0
