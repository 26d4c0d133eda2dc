"""Streamed responses that stream under both of the project's servers.

The demo serves WSGI (``runserver``: a thread per request), the production profile ASGI (gunicorn with
uvicorn workers, ``gunicorn.conf.py``). Django streams a ``StreamingHttpResponse`` of a blocking
iterator under WSGI, and of an async iterator under ASGI; given the other kind, it reads the whole
content first and sends it at the end (with a warning), which turns a live answer into a long silence.
So a view that streams asks which handler serves it (``served_async``) and gives an answer's
events in that kind (``event_stream_response``); content that has only a blocking form (an export
reading the database) goes through ``streaming_response``, which under ASGI pulls it in the request's
own thread, some pieces at a time (``in_request_thread``): the database connection it uses is the
request's, closed with it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import aclosing

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.db import connections
from django.http import FileResponse, StreamingHttpResponse

#: ``in_request_thread`` hands over at most this many pieces, or about this many characters, per trip
#: to the request's thread (a trip costs about 0.1 ms; an export has a line per example).
PIECES_PER_TRIP = 256
CHARS_PER_TRIP = 64 * 1024


def served_async(request) -> bool:
    """True when ``request`` (Django's or DRF's) is served by the ASGI handler."""
    return isinstance(getattr(request, "_request", request), ASGIRequest)


def _some(iterator: Iterator) -> list:
    pieces, size = [], 0
    for piece in iterator:
        pieces.append(piece)
        size += len(piece)
        if len(pieces) >= PIECES_PER_TRIP or size >= CHARS_PER_TRIP:
            break
    return pieces


async def in_request_thread(iterable: Iterable) -> AsyncIterator:
    """The pieces of a blocking ``iterable`` for an ASGI response, pulled in the request's thread
    (``sync_to_async``, thread-sensitive) up to ``PIECES_PER_TRIP`` pieces or ``CHARS_PER_TRIP``
    characters at a time; closed there when the reader leaves."""
    iterator = iter(iterable)
    pull = sync_to_async(_some)
    try:
        while True:
            pieces = await pull(iterator)
            if not pieces:
                return
            for piece in pieces:
                yield piece
    finally:
        close = getattr(iterator, "close", None)
        if close is not None:
            await sync_to_async(close)()


async def without_database(content: AsyncIterator) -> AsyncIterator:
    """``content``, with the request's database connection given back (to the pool, or closed) before
    the first piece: an answer streaming for a minute must not hold one of the database's connections
    (PostgreSQL allows 100 by default, and an ASGI worker carries hundreds of streams). A piece that
    needs the database later (the stored turn, at the end) takes one again, in the request's thread."""
    await sync_to_async(connections.close_all)()
    async with aclosing(content):
        async for piece in content:
            yield piece


def event_stream_response(content: Iterable | AsyncIterator) -> StreamingHttpResponse:
    """A ``text/event-stream`` response of ``content`` (the kind the serving handler takes), neither
    cached nor buffered by a proxy; async content streams without a database connection
    (``without_database``)."""
    if hasattr(content, "__aiter__"):
        content = without_database(content)
    response = StreamingHttpResponse(content, content_type="text/event-stream; charset=utf-8")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response


def streaming_response(request, pieces: Iterable, *, content_type: str) -> StreamingHttpResponse:
    """A ``StreamingHttpResponse`` of the blocking ``pieces`` (an export reading the database), streamed
    by whichever server handles ``request``: as they are under WSGI, pulled by ``in_request_thread``
    under ASGI."""
    content = in_request_thread(pieces) if served_async(request) else pieces
    return StreamingHttpResponse(content, content_type=content_type)


def file_response(request, handle, **kwargs) -> FileResponse:
    """``FileResponse(handle, **kwargs)`` (its length, type and attachment headers from the open binary
    file ``handle``), streamed in blocks under either server: under ASGI its blocks are pulled in the
    request's thread (``in_request_thread``), since Django's ASGI handler would read the whole file into
    memory before sending a byte (a dataset release can be large). The file is closed with the response.
    """
    response = FileResponse(handle, **kwargs)
    if served_async(request):
        block = response.block_size
        response.streaming_content = in_request_thread(iter(lambda: handle.read(block), b""))
    return response
