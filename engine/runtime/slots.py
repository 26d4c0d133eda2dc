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

**The line is bounded in a web process.** A request waiting in line holds one of the server's request
threads (8 in the demo's server, ``DYNABENCH_WEB_THREADS`` per gunicorn worker) for as long as it
waits; with 20 answers in line every thread waited, and ``/health/`` and the sign-in page took 12 to
59 s on the demo. So the web server sets ``max_waiting`` when it starts
(``waiting_bound``, from its thread count; ``DYNABENCH_GENERATION_QUEUE`` overrides it): a request that
would wait beyond it is refused at once with ``QueueFull`` (503 with ``Retry-After``), and the other
threads stay free for ordinary pages. In the demo's server a request's thread leaves the pool as it
joins the line (``join``, ``core.request_threads``), so there the slots are a batch's size and the bound
``WAITING_BATCHES`` batches' worth (``web_slots``, ``waiting_bound``). Processes that serve no requests (the job cluster's replays and
judges) leave it unbounded. A request that stores something before it generates (a red-teaming turn)
``admit``s first, before it stores: its thread is promised a place in line, counted from then on, so
that a burst of requests cannot all pass the check before any has joined. The promise ends when the
thread joins, when its request ends (``withdraw``) or after ``PROMISE_SECONDS``.

**A refused requester keeps its place.** ``admit(places, who=...)`` names who asks (a user's id). When
the line is full, ``who`` is refused as before, but its places are kept in a second line, of those who
will come back, in the order they were refused, from its ``Retry-After`` until ``RETURN_GRACE_SECONDS``
later. Kept places count as waiting for everyone behind them: a newcomer is not let in on a place freed for
someone refused before it, and those refused come back in the order they were refused. Without it, a
refused red-teamer who came back after its ``Retry-After`` found the freed place taken by a newcomer
and could be refused again and again (docs/serving.md, "A refused sender keeps its place": in a burst
of 24, 8 of 72 messages took all 62 refusals, and the longest wait for a first token fell from 38.4 s
to 28.4 s). Before its ``Retry-After`` has passed, a kept place serves whoever asks, so that no slot
idles while the refused wait.

Imports no Django model; the count is read from the environment when the module loads.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from core.request_threads import leave_pool
from engine.runtime.model_files import InferenceError

#: Seconds a place promised by ``admit`` is kept for its thread's ``join`` at most: a safety net, as the
#: end of every request gives back an unused promise (``withdraw``). Long enough for a request that loads
#: a model before it joins: with 30 s, the first burst on a fresh demo loaded the second side-by-side
#: model for longer, the promise lapsed, and that answer was stored failed with "The model is busy".
PROMISE_SECONDS = 300.0
#: ``Retry-After`` (seconds) before any generation of this process has ended: about one answer of a
#: small local model on 2 cores (SmolLM2, 256 tokens at 25 tokens/s).
DEFAULT_HOLD_SECONDS = 10.0
#: Holds whose mean estimates the time one generation takes (``retry_after``).
HOLDS_REMEMBERED = 20
#: Seconds a refused requester's kept place (``admit``'s ``who``) outlasts the ``Retry-After`` it was told:
#: a person reads the message and sends again, later than a script would; a place kept for someone who
#: never comes back holds newcomers back for no longer than this.
RETURN_GRACE_SECONDS = 20.0
#: Slots of a web process whose streams leave its request pool (``web_slots``). SmolLM2 on 2 cores, 64
#: tokens each (``benchmarks/continuous_batching.py``, docs/generative.md, "Continuous batching"): 8
#: answers in one batch gave 60.0 tokens/s in all, 7.5 each; 16 gave 89.6 in all but 5.6 each, about a
#: reader's pace (250 words a minute) with no margin for a busier machine. So 8; the others wait.
BATCH_SLOTS = 8
#: Batches' worth of answers that may wait where a waiting request leaves the server's pool
#: (``waiting_bound``): a waiter there holds no page's thread, only memory, so a longer line costs pages
#: nothing, and a request that waits in it is served in order, where one refused must come back and may
#: be refused again. The burst of 24 red-teamers x 3 messages with no think time (docs/serving.md, "A
#: refused sender keeps its place"): with 1 batch waiting, the longest wait for a first token was 28.4 and
#: 30.7 s with 67 and 68 refusals; with 3 (24 waiting), 14.4 and 16.1 s with none, at 62.5 and 58.9
#: tokens/s in all (as before places were kept).
WAITING_BATCHES = 3


class SlotTimeout(Exception):
    """No slot came free within the wait allowed."""


class QueueFull(InferenceError):
    """The line for a generation slot is as long as this process allows (``GenerationSlots.max_waiting``):
    the request is refused at once instead of holding a server thread while it waits (answered 503 with
    ``Retry-After``; nothing of the request is stored).

    Attributes:
        waiting: requests waiting in line in this process now, and places kept for those refused
            before (those holding a slot not counted).
        retry_after: whole seconds, at least 1, until the line waiting now is likely to have had its
            turn (``GenerationSlots.retry_after``).
        kept: whole seconds the requester's place is kept for its return (``admit``'s ``who``), or
            None when none is kept.
        returning: of ``waiting``, the places kept for those refused before (not on the server: the
            message says them apart).
    """

    code = "queue_full"

    def __init__(self, waiting: int, retry_after: int, kept: int | None = None, returning: int = 0):
        self.waiting, self.retry_after, self.kept, self.returning = waiting, retry_after, kept, returning
        here = waiting - returning
        if here:
            answers = "1 answer is" if here == 1 else f"{here} answers are"
            busy = f"{answers} waiting for it on this server already"
        elif returning:
            busy = "it is answering others"
        else:  # a bound of 0: nothing may wait
            busy = "it is answering others and this server lets no request wait"
        if returning:
            places = "1 place is" if returning == 1 else f"{returning} places are"
            busy += f", and {places} kept for people refused before you"
        again = f"try again in about {retry_after} s"
        if kept is not None:
            again += f"; your place in line is kept for {kept} s"
        super().__init__(f"The model is busy: {busy}; {again}.")


class GenerationSlots:
    """A first-come-first-served counting semaphore that can say how many are ahead of a waiter.

    A holder ``join``s the line and gets a ticket, ``wait``s for its turn (in steps, so that a stream can
    tell its reader where it stands between steps), and ``leave``s when done or given up. ``slot()``
    does the three for a ``with`` block.

    With ``max_waiting`` set, ``join`` and ``admit`` refuse (``QueueFull``) a newcomer that would make
    more than ``max_waiting`` wait: with ``ahead`` before it (those in line plus the places promised to
    other threads by ``admit``) and ``free`` slots not held, it would wait when ``ahead >= free``, and the
    waiters would then number ``ahead + 1 - free``. With one slot held and ``max_waiting`` 3, three may
    wait and the fourth is refused.

    Args:
        size: how many holders at once (at least 1).
        max_waiting: the most waiters (at least 0), or None for no bound; may be set later.
        clock: seconds, monotonic (a test's hand-moved clock).

    Raises:
        ValueError: ``size`` below 1.
    """

    def __init__(
        self, size: int, max_waiting: int | None = None, clock: Callable[[], float] = time.monotonic
    ):
        if size < 1:
            raise ValueError(f"generation slots must be at least 1, not {size}")
        self.size = size
        self.max_waiting = max_waiting
        self._clock = clock
        self._lock = threading.Condition()
        self._holding: dict[object, float] = {}  # ticket: when it took its slot
        self._line: deque[object] = deque()
        # thread id: (when ``admit`` promised it places, how many are left)
        self._promised: dict[int, tuple[float, int]] = {}
        # who was refused, in the order refused: (when it was told to come back, until when its places
        # are kept, how many)
        self._returning: dict[object, tuple[float, float, int]] = {}
        self._holds: deque[float] = deque(maxlen=HOLDS_REMEMBERED)

    def waiting(self) -> int:
        """Requests waiting in line now, places promised by ``admit`` not yet taken, and places kept for
        those refused."""
        with self._lock:
            return self._waiting(threading.get_ident())

    def retry_after(self) -> int:
        """Whole seconds (at least 1) until the requests waiting now, and one more, are likely to have had
        their turn: (waiting + 1) x the mean time the last ``HOLDS_REMEMBERED`` generations held their
        slot / the slots (``DEFAULT_HOLD_SECONDS`` for the mean before any has ended). One place frees up
        sooner, but clients told that time all come back at once and all but one are refused again; told
        the line's length, they come back spread out as the line moves."""
        with self._lock:
            return self._retry_after_of(self._waiting(threading.get_ident()))

    def admit(self, places: int = 1, who: object = None) -> None:
        """Promise the calling thread ``places`` places in line (a side-by-side message's answers, an
        arena battle's two), before its request stores anything; each of its next ``join``s takes one.
        They count as waiting until taken, or for ``PROMISE_SECONDS`` at most; a second ``admit`` of the
        thread replaces the first, checked only for the places it asks beyond the first's. All or none:
        a line with room for fewer refuses.

        ``who`` (hashable: a user's id), when given, is who asks: refused, its places are kept for its
        return (the module's docstring), and the places kept for others refused before it count as
        waiting ahead of it; admitted, its kept places are given up.

        Raises:
            QueueFull: the line is full (see the class), with ``kept`` set when ``who`` is given.
            ValueError: ``places`` below 1.
        """
        if places < 1:
            raise ValueError(f"a promise is of at least 1 place, not {places}")
        me = threading.get_ident()
        with self._lock:
            self._forget_old_promises()
            held = self._promised.pop(me, (None, 0))[1]
            # A request that asks again (the page checks before it starts a conversation, then again as
            # it sends) keeps what it was promised: checked again, it could find its place given to
            # those refused before it came back.
            if places > held:
                self._refuse_if_full(me, places - held, who)
            self._returning.pop(who, None)
            self._promised[me] = (self._clock(), places)

    def withdraw(self) -> None:
        """Give back the calling thread's promised place, if ``admit`` left one unused (its request was
        refused for another reason after the check, or ended); called when every request ends
        (``models_registry.apps``)."""
        with self._lock:
            self._promised.pop(threading.get_ident(), None)

    def join(self) -> object:
        """Join the end of the line; returns the ticket to ``wait`` and ``leave`` with. A thread that was
        promised a place (``admit``) takes it without a second check. A server pool's thread leaves its
        pool here (``core.request_threads.leave_pool``): from now on it waits on the model.

        Raises:
            QueueFull: the line is full (see the class) and no place was promised to this thread.
        """
        ticket = object()
        me = threading.get_ident()
        with self._lock:
            self._forget_old_promises()
            promised = self._promised.pop(me, None)
            if promised is None:
                self._refuse_if_full(me)
            elif promised[1] > 1:
                self._promised[me] = (promised[0], promised[1] - 1)
            self._line.append(ticket)
        # The request will wait on the model from here on, holding no CPU: in the demo's server its thread
        # gives its place in the pool to a new one, so pages never wait behind answers.
        try:
            leave_pool()
        except Exception:
            self.leave(ticket)
            raise
        return ticket

    def _forget_old_promises(self) -> None:
        now = self._clock()
        oldest = now - PROMISE_SECONDS
        for thread, (promised, _) in list(self._promised.items()):
            if promised < oldest:
                del self._promised[thread]
        for who, (_, until, _) in list(self._returning.items()):
            if until < now:
                del self._returning[who]

    def _kept_ahead(self, who: object, due_only: bool) -> int:
        """Places kept for those refused before ``who`` (all of them when ``who`` is not one); with
        ``due_only``, only those whose time to come back has come: before it, their places serve whoever
        is there, so that no slot idles while the refused wait out their ``Retry-After``."""
        kept, now = 0, self._clock()
        for other, (due, _, places) in self._returning.items():
            if who is not None and other == who:
                break
            if not due_only or due <= now:
                kept += places
        return kept

    def _queued(self, me: int) -> int:
        """Those in line and the places promised to other threads: the requests on the server."""
        return len(self._line) + sum(n for thread, (_, n) in self._promised.items() if thread != me)

    def _waiting(self, me: int, who: object = None) -> int:
        """Those who wait ahead of ``me`` (``who``), every place kept ahead counted: what a refusal says."""
        self._forget_old_promises()
        free = self.size - len(self._holding)
        return max(0, self._queued(me) + self._kept_ahead(who, due_only=False) - free)

    def _refuse_if_full(self, me: int, places: int = 1, who: object = None) -> None:
        if self.max_waiting is None:
            return
        self._forget_old_promises()
        queued = self._queued(me)
        ahead = queued + self._kept_ahead(who, due_only=True)
        free = self.size - len(self._holding)
        if ahead + places <= free or ahead + places - free <= self.max_waiting:
            return
        waiting = max(0, queued + self._kept_ahead(who, due_only=False) - free)
        # Of those, the places kept for people refused before, which the message tells apart.
        returning = waiting - max(0, queued - free)
        retry_after = self._retry_after_of(waiting)
        kept = None
        if who is not None:
            # Kept in the order refused: one who comes back again too early keeps its place.
            kept = retry_after + math.ceil(RETURN_GRACE_SECONDS)
            now = self._clock()
            due = now + retry_after
            if who in self._returning:  # back again: a place kept since its first due time stays kept
                due = min(due, self._returning[who][0])
            self._returning[who] = (due, now + kept, places)
        raise QueueFull(waiting, retry_after, kept, returning=returning)

    def _retry_after_of(self, waiting: int) -> int:
        """``retry_after``'s seconds for ``waiting`` requests ahead (its formula)."""
        mean = sum(self._holds) / len(self._holds) if self._holds else DEFAULT_HOLD_SECONDS
        return max(1, math.ceil((waiting + 1) * mean / self.size))

    def wait(self, ticket: object, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for ``ticket``'s turn; True once it holds a slot (then at once
        on every later call)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while ticket not in self._holding:
                if len(self._holding) < self.size and self._line and self._line[0] is ticket:
                    self._line.popleft()
                    self._holding[ticket] = self._clock()
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
            took = self._holding.pop(ticket, None)
            if took is not None:
                self._holds.append(self._clock() - took)
            if ticket in self._line:
                self._line.remove(ticket)
            self._lock.notify_all()

    @contextmanager
    def slot(self, *, timeout: float | None = None) -> Iterator[float]:
        """Hold a slot for the ``with`` block; yields the seconds waited for it.

        Raises:
            SlotTimeout: no slot within ``timeout`` seconds (None: wait for ever).
            QueueFull: as ``join``.
        """
        started = time.monotonic()
        ticket = self.join()
        try:
            if not self.wait(ticket, float("inf") if timeout is None else timeout):
                raise SlotTimeout(f"no generation slot within {timeout:.0f} s")
            yield time.monotonic() - started
        finally:
            self.leave(ticket)


def waiting_bound(
    threads: int, slots: int, configured: int | None = None, *, threads_leave_pool: bool = False
) -> int:
    """The most requests a web process with ``threads`` request threads and ``slots`` generation slots
    lets wait in line (``GenerationSlots.max_waiting``): ``configured`` (``DYNABENCH_GENERATION_QUEUE``)
    when given; else, when a request thread leaves the server's pool as it joins the line
    (``threads_leave_pool``, the demo's server: ``core.request_threads``), ``WAITING_BATCHES`` x
    ``slots``; else ``threads - slots - ceil(threads / 2)``, at least 0.

    Why: where the requests holding a slot and those waiting each hold a pool thread, half the threads
    (rounded up) are kept for everything else. The demo's 8 threads and 1 slot: 3 wait (4 threads for
    pages); a gunicorn worker's 4 threads: 1 waits (2 for pages). With as many slots as threads or
    more, nothing waits: a request that finds every slot held is refused. Where they leave the pool, the
    waiters take no page's thread, and ``WAITING_BATCHES`` batches' worth may wait: waiting in order beats
    being refused and coming back (the constant's comment).

    Raises:
        ValueError: ``threads`` below 1 or ``configured`` below 0.
    """
    if threads < 1:
        raise ValueError(f"a web process has at least 1 request thread, not {threads}")
    if configured is not None:
        if configured < 0:
            raise ValueError(f"DYNABENCH_GENERATION_QUEUE must be at least 0, not {configured}")
        return configured
    if threads_leave_pool:
        return WAITING_BATCHES * slots
    return max(0, threads - slots - math.ceil(threads / 2))


def web_slots(threads: int, configured: int | None = None, *, threads_leave_pool: bool = False) -> int:
    """The generation slots of a web process with ``threads`` request threads: ``configured``
    (``DYNABENCH_GENERATION_SLOTS``) when given; else ``BATCH_SLOTS`` when a request thread leaves the
    server's pool as it joins the line (``threads_leave_pool``, the demo's server); else half the
    threads rounded down, at least 1.

    Why: the answers holding slots decode together in one batch per model (``runtime.batcher``), so
    more slots cost little more than one. Where a streamed answer holds its request thread for as long
    as it streams, half the threads stay for every other page (as ``waiting_bound`` keeps them); where
    it leaves the pool, the batch's best size on 2 cores is the limit.

    Raises:
        ValueError: ``threads`` or ``configured`` below 1.
    """
    if threads < 1:
        raise ValueError(f"a web process has at least 1 request thread, not {threads}")
    if configured is not None:
        if configured < 1:
            raise ValueError(f"DYNABENCH_GENERATION_SLOTS must be at least 1, not {configured}")
        return configured
    if threads_leave_pool:
        return BATCH_SLOTS
    return max(1, threads // 2)


def _configured_size() -> int:
    raw = os.environ.get("DYNABENCH_GENERATION_SLOTS", "1").strip() or "1"
    try:
        return max(1, int(raw))
    except ValueError:
        return 1


#: The process's slots, shared by every local chat model.
GENERATION_SLOTS = GenerationSlots(_configured_size())
