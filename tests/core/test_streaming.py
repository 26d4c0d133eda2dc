"""``core.streaming``: a response streams in the kind its server takes, so that neither server reads it
whole first; under ASGI a file goes in blocks pulled in the request's thread."""

from __future__ import annotations

import asyncio

import pytest
from django.test import AsyncRequestFactory, RequestFactory

from core.streaming import file_response, served_async, streaming_response

# Closing a response sends request_finished, whose handler closes the database connections.
pytestmark = pytest.mark.django_db


def _collect(response) -> bytes:
    async def read():
        return b"".join([part async for part in response])

    return asyncio.run(read())


def test_a_file_streams_in_blocks_under_asgi_and_whole_under_wsgi(tmp_path):
    body = bytes(range(256)) * 1000  # 256,000 bytes: several blocks
    path = tmp_path / "train.jsonl"
    path.write_bytes(body)
    asgi_request = AsyncRequestFactory().get("/")
    assert served_async(asgi_request)
    handle = path.open("rb")
    response = file_response(asgi_request, handle, as_attachment=True, filename="train.jsonl")
    assert response.is_async  # Django's ASGI handler streams it instead of reading it into a list first
    assert response["Content-Length"] == str(len(body))
    assert response["Content-Disposition"] == 'attachment; filename="train.jsonl"'
    assert _collect(response) == body
    response.close()
    assert handle.closed

    wsgi_request = RequestFactory().get("/")
    assert not served_async(wsgi_request)
    response = file_response(wsgi_request, path.open("rb"))
    assert not response.is_async and b"".join(response) == body
    response.close()


def test_blocking_pieces_are_pulled_in_trips_under_asgi():
    pieces = [f"line {n}\n" for n in range(600)]  # more than PIECES_PER_TRIP (256)
    response = streaming_response(AsyncRequestFactory().get("/"), iter(pieces), content_type="text/plain")
    assert response.is_async
    assert _collect(response).decode() == "".join(pieces)
