"""The process's line for a generation slot (``engine.runtime.slots.GENERATION_SLOTS``), made full
for a test of what a request beyond its bound is told."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from engine.runtime.slots import GENERATION_SLOTS


@contextmanager
def full_generation_line(waiting: int) -> Iterator[None]:
    """Bound the line at ``waiting`` and fill it: one generation holds the slot, ``waiting`` wait. The
    bound is lifted, every place given back and every place kept for a refused requester forgotten on
    leaving."""
    tickets = [GENERATION_SLOTS.join() for _ in range(waiting + 1)]
    assert GENERATION_SLOTS.wait(tickets[0], 0)
    GENERATION_SLOTS.max_waiting = waiting
    try:
        yield
    finally:
        GENERATION_SLOTS.max_waiting = None
        GENERATION_SLOTS._returning.clear()
        for ticket in tickets:
            GENERATION_SLOTS.leave(ticket)
