"""An answer read on an event loop is read in gulps (``sse._apaced``): after each ``token`` event the
reading pauses ``GATHER_SECONDS``, pieces that were already there are held, and a piece that had to be
waited for sends what is held. On a hand-moved clock: each piece says how long its pull took."""

from __future__ import annotations

import asyncio
import json

import pytest

from annotation.red_team import sse
from models_registry.serving import Waiting


class Clock:
    def __init__(self):
        self.now = 1000.0
        self.log: list[tuple] = []

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.log.append(("pause", seconds))
        self.now += seconds


@pytest.fixture
def clock(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(sse.time, "monotonic", clock.monotonic)
    monkeypatch.setattr(sse.asyncio, "sleep", clock.sleep)
    return clock


def run(clock: Clock, script: list[tuple[float, str]]) -> list[tuple]:
    """Read ``script`` ([(seconds the pull took, piece)]) through ``_apaced``; the log of pulls, events
    (their text, or ``queued`` with the count ahead) and pauses, in order."""

    async def pieces():
        for took, piece in script:
            clock.now += took
            clock.log.append(("pull", str(piece) if not isinstance(piece, Waiting) else "waiting"))
            yield piece

    async def read():
        async for said in sse._apaced(pieces(), sse._Gathered()):
            for block in said.strip().split("\n\n"):
                name, data = block.split("\n")
                payload = json.loads(data.removeprefix("data: "))
                if name == "event: token":
                    clock.log.append(("event", payload["text"]))
                else:
                    clock.log.append(("queued", payload["ahead"]))

    asyncio.run(read())
    return clock.log


def test_the_first_piece_goes_at_once_and_the_pieces_already_there_go_with_the_next_one_waited_for(clock):
    log = run(clock, [(0.02, "a"), (0.0, "b"), (0.0, "c"), (0.02, "d"), (0.0, "e")])
    assert log == [
        ("pull", "a"),
        ("event", "a"),
        ("pause", sse.GATHER_SECONDS),
        ("pull", "b"),  # read with the same gulp: held
        ("pull", "c"),
        ("pull", "d"),  # waited for: what is held goes with it
        ("event", "bcd"),
        ("pause", sse.GATHER_SECONDS),
        ("pull", "e"),  # held; the end of the answer is its caller's to send (``rest``)
    ]


def test_a_wait_for_the_model_is_said_at_once_without_a_pause(clock):
    log = run(clock, [(0.0, Waiting(2)), (0.0, Waiting(1)), (0.5, "a")])
    assert log == [
        ("pull", "waiting"),
        ("queued", 2),
        ("pull", "waiting"),
        ("queued", 1),
        ("pull", "a"),
        ("event", "a"),
        ("pause", sse.GATHER_SECONDS),
    ]


def test_a_server_that_never_pauses_is_still_seen_to_grow(clock):
    # Each piece comes in just under the waiting mark: none was waited for, yet what is held goes out
    # once it is HELD_AT_MOST_SECONDS older than the last event.
    step = sse.WAITED_SECONDS * 0.9
    script = [(0.02, "first")] + [(step, "x")] * 600
    log = run(clock, script)
    events = [entry[1] for entry in log if entry[0] == "event"]
    assert events[0] == "first"
    # The pause counts: (HELD_AT_MOST_SECONDS - GATHER_SECONDS) / step pieces after it, rounded up.
    held = -(-(sse.HELD_AT_MOST_SECONDS - sse.GATHER_SECONDS) // step)
    assert held == 223
    assert events[1:] == ["x" * 223, "x" * 223]  # and 154 still held when the answer ends


def run_side_by_side(clock: Clock, script: list[tuple[float, int, str]]) -> list[tuple]:
    """``run`` for the answers of a side-by-side first message: [(seconds the pull took, slot, piece)];
    events are logged with their slot."""

    async def pieces():
        for took, slot, piece in script:
            clock.now += took
            clock.log.append(("pull", slot, piece))
            yield slot, piece

    async def read():
        async for said in sse._apaced_candidates(pieces(), {}):
            for block in said.strip().split("\n\n"):
                payload = json.loads(block.split("\n")[1].removeprefix("data: "))
                clock.log.append(("event", payload["slot"], payload["text"]))

    asyncio.run(read())
    return clock.log


def test_side_by_side_a_piece_waited_for_sends_what_every_answer_holds(clock):
    log = run_side_by_side(
        clock, [(0.02, 0, "a"), (0.0, 1, "x"), (0.0, 0, "b"), (0.0, 1, "y"), (0.02, 0, "c"), (0.0, 1, "z")]
    )
    pause = ("pause", sse.GATHER_SECONDS)
    assert log == [
        ("pull", 0, "a"),
        ("event", 0, "a"),  # each answer's first piece goes at once
        pause,
        ("pull", 1, "x"),
        ("event", 1, "x"),
        pause,
        ("pull", 0, "b"),  # read with the same gulp: held, each answer apart
        ("pull", 1, "y"),
        ("pull", 0, "c"),  # waited for: what both answers hold goes with it, the other's first
        ("event", 1, "y"),
        ("event", 0, "bc"),
        pause,
        ("pull", 1, "z"),  # held; the end is the caller's to send
    ]
