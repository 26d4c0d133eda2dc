"""``pieces_in_thread``: a blocking answer read from an event loop (an ASGI worker), in order, its errors
raised, and a reader who leaves closing it in its own thread before the read ends."""

from __future__ import annotations

import asyncio
import threading

import pytest

from engine.runtime.generative import pieces_in_thread


def _pieces(log: list, fail_at: int | None = None):
    try:
        for number in range(5):
            if number == fail_at:
                raise ValueError("broken")
            yield f"p{number}"
    finally:
        log.append(("closed in", threading.current_thread().name))


def test_pieces_come_in_order_and_the_iterator_ends_in_its_own_thread():
    log: list = []

    async def read():
        return [piece async for piece in pieces_in_thread(_pieces(log))]

    assert asyncio.run(read()) == ["p0", "p1", "p2", "p3", "p4"]
    assert log == [("closed in", "answer-pieces")]


def test_an_error_of_the_iterator_is_raised_to_the_reader_after_the_pieces_before_it():
    log: list = []
    seen: list = []

    async def read():
        async for piece in pieces_in_thread(_pieces(log, fail_at=2)):
            seen.append(piece)

    with pytest.raises(ValueError, match="broken"):
        asyncio.run(read())
    assert seen == ["p0", "p1"] and log == [("closed in", "answer-pieces")]


def test_a_reader_who_leaves_closes_the_iterator_and_waits_for_its_finally():
    log: list = []
    release = threading.Event()

    def slow():
        try:
            yield "first"
            release.wait(5)  # the model is computing its next token when the reader leaves
            yield "second"
            yield "never read"
        finally:
            log.append("finally ran")

    async def read():
        pieces = pieces_in_thread(slow())
        first = await pieces.__anext__()
        asyncio.get_running_loop().call_later(0.05, release.set)
        await pieces.aclose()  # returns only once the iterator's finally has run
        return first, list(log)

    assert asyncio.run(read()) == ("first", ["finally ran"])
