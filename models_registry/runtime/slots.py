"""Generation slots: how many local generations (and multiple-choice scorings) run at once in a process.

On a small CPU machine, answers generated side by side share the same cores, and each slows the others
down more than the work saved. Measured with SmolLM2 on 2 cores (docs/generative.md, "Benchmarks"):
with 20 red-teamers at once and eight generations in parallel, each answer came at 2.3 tokens/s, and
all of them together at 16.5 tokens/s, against 25 tokens/s for one answer alone. So a process runs
``DYNABENCH_GENERATION_SLOTS`` generations at a time (default 1). The others wait in line, first come,
first served, and their readers are told how many are ahead of them.

    with GENERATION_SLOTS.slot():   # blocks until a slot is free
        model.generate(...)

A stream waits in steps instead (``join``, ``wait``, ``ahead_of``, ``leave``) and tells its reader where
it stands between them (``runtime.generative.Waiting``).

Imports no Django model; the count is read from the environment when the module loads.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager


class SlotTimeout(Exception):
    """No slot came free within the wait allowed."""


class GenerationSlots:
    """A first-come-first-served counting semaphore that can say how many are ahead of a waiter.

    A holder ``join``s the line and gets a ticket, ``wait``s for its turn (in steps, so that a stream can
    tell its reader where it stands between steps), and ``leave``s when done or given up. ``slot()``
    does the three for a ``with`` block.

    Args:
        size: how many holders at once (at least 1).

    Raises:
        ValueError: ``size`` below 1.
    """

    def __init__(self, size: int):
        if size < 1:
            raise ValueError(f"generation slots must be at least 1, not {size}")
        self.size = size
        self._lock = threading.Condition()
        self._holding: set[object] = set()
        self._line: deque[object] = deque()

    def join(self) -> object:
        """Join the end of the line; returns the ticket to ``wait`` and ``leave`` with."""
        ticket = object()
        with self._lock:
            self._line.append(ticket)
        return ticket

    def wait(self, ticket: object, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for ``ticket``'s turn; True once it holds a slot (then at once
        on every later call)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while ticket not in self._holding:
                if len(self._holding) < self.size and self._line and self._line[0] is ticket:
                    self._line.popleft()
                    self._holding.add(ticket)
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._lock.wait(None if left == float("inf") else left)
            return True

    def ahead_of(self, ticket: object) -> int:
        """How many waiters are before ``ticket`` in line (0 when it is next or holds a slot)."""
        with self._lock:
            return self._line.index(ticket) if ticket in self._line else 0

    def leave(self, ticket: object) -> None:
        """Give up ``ticket``'s place in line, or its slot; the next in line may go."""
        with self._lock:
            self._holding.discard(ticket)
            if ticket in self._line:
                self._line.remove(ticket)
            self._lock.notify_all()

    @contextmanager
    def slot(self, *, timeout: float | None = None) -> Iterator[float]:
        """Hold a slot for the ``with`` block; yields the seconds waited for it.

        Raises:
            SlotTimeout: no slot within ``timeout`` seconds (None: wait for ever).
        """
        started = time.monotonic()
        ticket = self.join()
        try:
            if not self.wait(ticket, float("inf") if timeout is None else timeout):
                raise SlotTimeout(f"no generation slot within {timeout:.0f} s")
            yield time.monotonic() - started
        finally:
            self.leave(ticket)


def _configured_size() -> int:
    raw = os.environ.get("DYNABENCH_GENERATION_SLOTS", "1").strip() or "1"
    try:
        return max(1, int(raw))
    except ValueError:
        return 1


#: The process's slots, shared by every local chat model.
GENERATION_SLOTS = GenerationSlots(_configured_size())
