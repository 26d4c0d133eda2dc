"""Generation slots (models_registry/runtime/slots.py): one local generation at a time per process, the
others in line, first come first served, each told how many are ahead."""

from __future__ import annotations

import threading
import time

import pytest

from models_registry.runtime.generative import Decoding, Waiting
from models_registry.runtime.slots import GENERATION_SLOTS, GenerationSlots, SlotTimeout


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
