"""Generation slots (engine/runtime/slots.py): one local generation at a time per process, the
others in line, first come first served, each told how many are ahead."""

from __future__ import annotations

import threading
import time

import pytest

from engine.runtime.generative import Decoding, Waiting
from engine.runtime.slots import (
    GENERATION_SLOTS,
    PROMISE_SECONDS,
    RETURN_GRACE_SECONDS,
    GenerationSlots,
    QueueFull,
    SlotTimeout,
    waiting_bound,
    web_slots,
)


def test_the_line_is_first_come_first_served_and_says_who_is_ahead():
    slots = GenerationSlots(1)
    a, b, c = slots.join(), slots.join(), slots.join()
    assert slots.wait(a, 0) is True
    assert (slots.ahead_of(b), slots.ahead_of(c)) == (0, 1)
    assert slots.wait(c, 0.01) is False  # c may not pass b, even with a gone and b not asking
    slots.leave(a)
    assert slots.wait(c, 0.01) is False
    assert slots.wait(b, 0) is True and slots.ahead_of(c) == 0
    slots.leave(b)
    assert slots.wait(c, 0) is True


def test_two_slots_hold_two_and_a_waiter_that_leaves_frees_its_place():
    slots = GenerationSlots(2)
    a, b, c, d = (slots.join() for _ in range(4))
    assert slots.wait(a, 0) and slots.wait(b, 0) and not slots.wait(c, 0.01)
    slots.leave(c)  # gave up waiting
    slots.leave(a)
    assert slots.wait(d, 0) is True


def test_the_slot_block_raises_when_no_slot_comes():
    slots = GenerationSlots(1)
    held = slots.join()
    slots.wait(held, 0)
    with pytest.raises(SlotTimeout):
        with slots.slot(timeout=0.05):
            pass
    assert slots.ahead_of(object()) == 0 and len(slots._line) == 0


def test_a_second_answer_waits_for_the_first_and_says_so(smollm2):
    assert GENERATION_SLOTS.size == 1
    decoding = Decoding(max_new_tokens=24)
    first = smollm2.stream([{"role": "user", "content": "Count from one to twenty."}], decoding)
    pieces_first = [next(first)]  # the first answer holds the slot and is generating
    second = smollm2.stream([{"role": "user", "content": "Say hello."}], decoding)
    seen: list = []
    first_piece_at: list[float] = []

    def read():
        for piece in second:
            if piece and not first_piece_at:
                first_piece_at.append(time.perf_counter())
            seen.append(piece)

    reader = threading.Thread(target=read)
    reader.start()
    time.sleep(1.3)
    pieces_first += list(first)
    first_ended = time.perf_counter()
    reader.join(timeout=60)
    waiting = [p for p in seen if isinstance(p, Waiting)]
    assert waiting and {p.ahead for p in waiting} == {0} and all(p == "" for p in waiting)
    text = "".join(seen)
    assert text == second.generation.text and text
    assert second.generation.extra["queued_ms"] >= 1000 and "queued_ms" not in first.generation.extra
    # The second answer's first piece came only once the first answer had ended and left its slot.
    assert first_piece_at[0] >= first_ended


# --- The bound on the line (a web process: runtime/slots.py, "The line is bounded") -------------------


class Clock:
    """A clock moved by hand, in seconds."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class OnThread:
    """Calls made on one thread of its own that lives as long as the test (a request thread of a server:
    a promise of ``admit`` belongs to the thread that made it)."""

    def __init__(self):
        from concurrent.futures import ThreadPoolExecutor

        self._pool = ThreadPoolExecutor(max_workers=1)

    def __call__(self, function, *args, **kwargs):
        return self._pool.submit(function, *args, **kwargs).result()


def _one_slot_held(max_waiting: int) -> tuple[Clock, GenerationSlots, object]:
    """``(clock, slots, holder)``: one generation slot on a hand-moved clock, bounded at
    ``max_waiting``, its slot held by ``holder``'s ticket."""
    clock = Clock()
    slots = GenerationSlots(1, max_waiting=max_waiting, clock=clock)
    holder = slots.join()
    slots.wait(holder, 0)
    return clock, slots, holder


def test_beyond_the_bound_a_newcomer_is_refused_with_the_lines_length_and_nothing_joins():
    slots = GenerationSlots(1, max_waiting=2)
    holder = slots.join()
    assert slots.wait(holder, 0)
    waiters = [slots.join(), slots.join()]  # 2 wait: the bound
    assert slots.waiting() == 2
    with pytest.raises(QueueFull) as refused:
        slots.join()
    # No hold ended yet: 10 s a generation; the 2 waiting and the newcomer: 30 s.
    assert (refused.value.waiting, refused.value.retry_after) == (2, 30)
    assert str(refused.value) == (
        "The model is busy: 2 answers are waiting for it on this server already; try again in about 30 s."
    )
    assert len(slots._line) == 2  # the refused one left no ticket behind
    slots.leave(holder)  # the first waiter takes the slot: one place in line frees up
    assert slots.wait(waiters[0], 0) and slots.waiting() == 1
    assert slots.wait(slots.join(), 0.01) is False  # admitted, waiting behind waiters[1]


def test_free_slots_are_taken_without_waiting_whatever_the_bound():
    slots = GenerationSlots(2, max_waiting=0)
    a, b = slots.join(), slots.join()  # two free slots: neither would wait
    assert slots.wait(a, 0) and slots.wait(b, 0) and slots.waiting() == 0
    with pytest.raises(QueueFull) as refused:
        slots.join()
    assert refused.value.waiting == 0
    # Two slots: (0 + 1) x 10 s / 2 = 5 s.
    assert str(refused.value) == (
        "The model is busy: it is answering others and this server lets no request wait; try again in "
        "about 5 s."
    )


def test_no_bound_by_default_as_in_a_process_that_serves_no_requests():
    slots = GenerationSlots(1)
    tickets = [slots.join() for _ in range(50)]
    assert slots.max_waiting is None and slots.waiting() == 49 and len(tickets) == 50


def test_a_place_promised_by_admit_counts_until_its_thread_joins_then_is_taken_without_a_second_check():
    clock, slots, holder = _one_slot_held(max_waiting=1)
    first, second = OnThread(), OnThread()
    first(slots.admit)  # the line is empty: one place promised
    assert slots.waiting() == 1
    with pytest.raises(QueueFull):  # the promise fills the line, before the first request joined
        second(slots.admit)
    with pytest.raises(QueueFull):
        slots.join()
    ticket = first(slots.join)  # takes its promised place, no second check
    assert slots.ahead_of(ticket) == 0 and len(slots._line) == 1 and slots.waiting() == 1
    with pytest.raises(QueueFull):  # the promise is used up: a second join of the thread is checked
        first(slots.join)


def test_admit_again_replaces_the_threads_promise_and_a_promise_lapses_after_its_seconds():
    clock, slots, holder = _one_slot_held(max_waiting=1)
    first, second = OnThread(), OnThread()
    first(slots.admit)
    first(slots.admit)  # the same request thread again (two models of one battle): still one place
    assert slots.waiting() == 1
    clock.now = PROMISE_SECONDS - 0.5
    with pytest.raises(QueueFull):
        second(slots.admit)
    clock.now = PROMISE_SECONDS + 0.5  # the first request never joined (refused for another reason)
    second(slots.admit)
    assert slots.waiting() == 1


def test_a_promise_of_several_places_is_all_or_none_and_each_join_takes_one():
    # A side-by-side message's two local answers join the line together (one piece of each in turn).
    slots = GenerationSlots(1, max_waiting=2)
    holder = slots.join()
    slots.wait(holder, 0)
    first, second = OnThread(), OnThread()
    second(slots.admit)  # another request holds one of the two places
    with pytest.raises(QueueFull):  # room for one more, not two: nothing promised
        first(slots.admit, 2)
    assert slots.waiting() == 1
    second(slots.withdraw)
    first(slots.admit, 2)
    assert slots.waiting() == 2
    with pytest.raises(QueueFull):  # the two places fill the line
        second(slots.admit)
    a, b = first(slots.join), first(slots.join)  # both taken without a second check
    assert slots.ahead_of(b) == 1 and slots.waiting() == 2
    with pytest.raises(QueueFull):  # used up: a third join of the thread is checked
        first(slots.join)
    with pytest.raises(ValueError, match="at least 1 place"):
        slots.admit(0)
    for ticket in (holder, a, b):
        slots.leave(ticket)


def test_a_refused_requester_keeps_its_place_ahead_of_newcomers_and_of_those_refused_after_it():
    clock, slots, holder = _one_slot_held(max_waiting=1)
    waiter = slots.join()  # the line is full
    ann, bob, newcomer = OnThread(), OnThread(), OnThread()
    with pytest.raises(QueueFull) as refused:
        ann(slots.admit, 1, who="ann")
    # 1 waits before ann: (1 + 1) x 10 s = 20 s; kept for 20 + RETURN_GRACE_SECONDS.
    assert RETURN_GRACE_SECONDS == 20
    assert (refused.value.waiting, refused.value.retry_after, refused.value.kept) == (1, 20, 40)
    assert str(refused.value) == (
        "The model is busy: 1 answer is waiting for it on this server already; try again in about 20 s; "
        "your place in line is kept for 40 s."
    )
    with pytest.raises(QueueFull) as refused:
        bob(slots.admit, 1, who="bob")
    # Behind the waiter and ann's kept place: (2 + 1) x 10 s, told later than ann.
    assert (refused.value.waiting, refused.value.retry_after, refused.value.kept) == (2, 30, 50)
    slots.leave(holder)
    assert slots.wait(waiter, 0)  # the line is empty: one place free
    clock.now = 30  # ann's and bob's times to come back have come: the place is kept for ann
    with pytest.raises(QueueFull) as refused:  # a newcomer does not take it
        newcomer(slots.admit)
    assert (refused.value.waiting, refused.value.kept) == (2, None)
    with pytest.raises(QueueFull):  # bob, back before ann, is still behind her
        bob(slots.admit, 1, who="bob")
    assert list(slots._returning) == ["ann", "bob"]
    ann(slots.admit, 1, who="ann")  # ann comes back: the place is hers
    assert list(slots._returning) == ["bob"]
    ticket = ann(slots.join)
    slots.leave(waiter)
    assert slots.wait(ticket, 0)
    bob(slots.admit, 1, who="bob")  # then bob's turn, before any newcomer
    assert slots._returning == {}
    with pytest.raises(QueueFull):
        newcomer(slots.admit)
    slots.leave(ticket)


def test_a_request_that_asks_again_keeps_its_promise_before_places_kept_for_others():
    # The page checks before it starts a conversation, then again as it sends: the second check must not
    # give the request's place to someone refused earlier, nor send it to the back of those kept.
    clock, slots, holder = _one_slot_held(max_waiting=1)
    ann, bob = OnThread(), OnThread()
    ann(slots.admit, 1, who="ann")  # the line's one place, promised to ann's request
    with pytest.raises(QueueFull) as refused:
        bob(slots.admit, 1, who="bob")
    clock.now = refused.value.retry_after  # bob's place is due: kept for him from now on
    ann(slots.admit, 1, who="ann")  # ann's request asks again: it keeps its place
    assert list(slots._returning) == ["bob"] and ann(slots.join) is not None
    with pytest.raises(QueueFull):  # one place more than it was promised is checked
        ann(slots.admit, 2, who="ann")


def test_a_place_serves_whoever_asks_until_the_refused_is_told_to_come_back():
    clock, slots, holder = _one_slot_held(max_waiting=0)
    with pytest.raises(QueueFull) as refused:
        slots.admit(who="ann")
    assert refused.value.retry_after == 10
    slots.leave(holder)
    clock.now = 9.5  # the slot is free and ann is not due back yet: it does not idle
    OnThread()(slots.admit)
    assert list(slots._returning) == ["ann"]


def test_a_kept_place_lapses_after_retry_after_and_the_grace_and_a_refusal_again_renews_it():
    clock, slots, holder = _one_slot_held(max_waiting=0)
    with pytest.raises(QueueFull) as refused:
        slots.admit(who="ann")  # nobody waits: (0 + 1) x 10 s, kept 10 + 20 s: until 30
    assert (refused.value.retry_after, refused.value.kept) == (10, 30)
    clock.now = 25
    with pytest.raises(QueueFull) as refused:  # back too early: refused again, kept until 25 + 30
        slots.admit(who="ann")
    assert refused.value.kept == 30
    slots.leave(holder)
    newcomer = OnThread()
    clock.now = 54.5
    with pytest.raises(QueueFull):  # the free slot is still kept for ann
        newcomer(slots.admit)
    clock.now = 55.5  # ann never came back
    newcomer(slots.admit)
    assert slots._returning == {} and slots.waiting() == 0  # the newcomer's place is the free slot
    assert GenerationSlots(1, max_waiting=None)._returning == {}  # unbounded: nobody is refused


def test_retry_after_is_the_lines_length_times_the_mean_time_a_slot_was_held_rounded_up():
    clock = Clock()
    slots = GenerationSlots(1, clock=clock)
    assert slots.retry_after() == 10  # nothing measured yet: DEFAULT_HOLD_SECONDS
    for held in (4.0, 5.5):  # two answers of 4 and 5.5 s: mean 4.75 s, said as 5 s
        ticket = slots.join()
        slots.wait(ticket, 0)
        clock.now += held
        slots.leave(ticket)
    waiter = slots.join()
    clock.now += 100  # the time spent waiting in line is not a hold
    slots.leave(waiter)
    assert slots.retry_after() == 5
    slots.max_waiting = 0
    held = slots.join()
    slots.wait(held, 0)
    with pytest.raises(QueueFull) as refused:
        slots.join()
    assert refused.value.retry_after == 5  # nobody waits: (0 + 1) x 4.75 s
    slots.max_waiting = 2
    waiting = [slots.join(), slots.join()]
    assert slots.retry_after() == 15  # (2 + 1) x 4.75 = 14.25, said as 15 s
    with pytest.raises(QueueFull) as refused:
        slots.join()
    assert refused.value.retry_after == 15
    for ticket in waiting:
        slots.leave(ticket)
    two = GenerationSlots(2, clock=clock, max_waiting=0)
    assert two.retry_after() == 5  # (0 + 1) x 10 s / 2 slots


@pytest.mark.parametrize(
    ("threads", "slots", "configured", "bound"),
    [
        (8, 1, None, 3),  # the demo's server: 8 - 1 - 4 kept for pages
        (4, 1, None, 1),  # a gunicorn worker of 4 threads: 4 - 1 - 2
        (5, 1, None, 1),  # 5 - 1 - 3 (half of 5, rounded up)
        (1, 1, None, 0),
        (8, 8, None, 0),  # every thread may hold a slot: nothing waits
        (8, 1, 6, 6),  # DYNABENCH_GENERATION_QUEUE wins
        (8, 1, 0, 0),
    ],
)
def test_the_bound_of_a_web_process_keeps_half_its_threads_for_pages(threads, slots, configured, bound):
    assert waiting_bound(threads, slots, configured) == bound


@pytest.mark.parametrize(
    ("threads", "configured", "slots"),
    [
        (8, None, 4),  # the demo's server: half its threads answer, decoded in one batch
        (4, None, 2),  # a gunicorn worker of 4 threads
        (5, None, 2),  # half of 5, rounded down
        (1, None, 1),  # at least 1
        (8, 1, 1),  # DYNABENCH_GENERATION_SLOTS wins
        (4, 16, 16),
    ],
)
def test_a_web_process_answers_with_half_its_threads(threads, configured, slots):
    assert web_slots(threads, configured) == slots


@pytest.mark.parametrize(
    ("threads", "slots_configured", "queue_configured", "slots", "bound"),
    [
        (8, None, None, 8, 24),  # the demo's server: a batch of 8 answers, and 3 batches' worth waiting
        (1, None, None, 8, 24),  # --nothreading: its one page thread is not what bounds the answers
        (8, 2, None, 2, 6),  # DYNABENCH_GENERATION_SLOTS wins, and 3 batches' worth wait
        (8, None, 0, 8, 0),  # DYNABENCH_GENERATION_QUEUE wins
    ],
)
def test_where_answers_leave_the_pool_the_slots_are_a_batch_not_a_share_of_the_threads(
    threads, slots_configured, queue_configured, slots, bound
):
    assert web_slots(threads, slots_configured, threads_leave_pool=True) == slots
    assert waiting_bound(threads, slots, queue_configured, threads_leave_pool=True) == bound


def test_joining_the_line_takes_a_pool_thread_out_of_the_pool_once_per_request():
    from core.request_threads import serve_with

    slots = GenerationSlots(1)
    started = []
    with serve_with(lambda: started.append("a new pool thread")) as left_pool:
        first = slots.join()
        second = slots.join()  # a second answer of the same request (the arena's pair)
    assert started == ["a new pool thread"]
    assert left_pool()
    slots.leave(first)
    slots.leave(second)
    assert slots.join() is not None  # outside a pool's request: nothing to leave, nothing started
    assert started == ["a new pool thread"]


def test_a_pool_that_cannot_start_a_thread_keeps_the_request_out_of_line():
    from core.request_threads import serve_with

    def cannot_start():
        raise RuntimeError("can't start new thread")

    slots = GenerationSlots(1)
    with serve_with(cannot_start) as left_pool, pytest.raises(RuntimeError, match="start new thread"):
        slots.join()
    assert not left_pool()
    assert slots.wait(slots.join(), 0)  # nothing was left in line before the next one


def test_web_slots_below_one_are_refused():
    with pytest.raises(ValueError, match="DYNABENCH_GENERATION_SLOTS must be at least 1, not 0"):
        web_slots(8, 0)
    with pytest.raises(ValueError, match="at least 1 request thread"):
        web_slots(0)


def test_a_bound_below_zero_or_a_server_without_threads_is_refused():
    with pytest.raises(ValueError, match="DYNABENCH_GENERATION_QUEUE must be at least 0, not -1"):
        waiting_bound(8, 1, -1)
    with pytest.raises(ValueError, match="at least 1 request thread"):
        waiting_bound(0, 1)


def test_withdraw_gives_back_the_threads_unused_promise_and_nothing_else():
    slots = GenerationSlots(1, max_waiting=1)
    holder = slots.join()
    slots.wait(holder, 0)
    first, second = OnThread(), OnThread()
    first(slots.admit)
    second(slots.withdraw)  # another thread's promise is not its to give back
    assert slots.waiting() == 1
    first(slots.withdraw)  # the request ended without generating
    assert slots.waiting() == 0
    second(slots.admit)


def test_the_refusal_tells_those_on_the_server_from_the_places_kept_for_people_refused_before():
    clock, slots, holder = _one_slot_held(max_waiting=1)
    waiter = slots.join()
    ann, bob = OnThread(), OnThread()
    with pytest.raises(QueueFull):
        ann(slots.admit, 1, who="ann")
    with pytest.raises(QueueFull) as refused:
        bob(slots.admit, 1, who="bob")
    assert (refused.value.waiting, refused.value.returning) == (2, 1)
    assert str(refused.value) == (
        "The model is busy: 1 answer is waiting for it on this server already, and 1 place is kept for "
        "people refused before you; try again in about 30 s; your place in line is kept for 50 s."
    )
    slots.leave(waiter)  # nobody waits on the server now: only ann's place is kept, then bob's
    clock.now = 30  # both due back
    with pytest.raises(QueueFull) as refused:
        OnThread()(slots.admit)
    assert (refused.value.waiting, refused.value.returning) == (2, 2)
    assert str(refused.value).startswith(
        "The model is busy: it is answering others, and 2 places are kept for people refused before you;"
    )
    slots.leave(holder)
