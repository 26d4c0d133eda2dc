"""A battle beyond the process's bound on the line for a generation slot (engine/runtime/slots.py,
"The line is bounded"): refused at once, 503 with ``Retry-After`` and how many wait, before the battle is
stored."""

from __future__ import annotations

import uuid

import pytest

from engine.runtime.slots import GENERATION_SLOTS
from generative_bench.models import Battle
from tests.factories.arena import make_arena
from tests.helpers.api import client_for
from tests.helpers.slots import full_generation_line


@pytest.fixture
def arena(db, smollm2_dir):
    return make_arena(smollm2_dir)


@pytest.fixture
def full_line():
    """The line bounded at 1 waiter and full: one generation holds the slot, one waits. Yields the
    seconds a first refusal tells (``GENERATION_SLOTS.retry_after`` before any place is kept)."""
    with full_generation_line(1):
        yield GENERATION_SLOTS.retry_after()


def test_a_battle_beyond_the_bound_is_a_503_and_nothing_is_stored(arena, annotator, full_line):
    refused = client_for(annotator).post(
        "/api/tasks/red-team/battles/",
        {"prompt": "Name a river.", "client_token": str(uuid.uuid4())},
        format="json",
    )
    seconds = full_line
    assert (refused.status_code, refused["Retry-After"]) == (503, str(seconds))
    assert refused.json() == {
        "detail": f"The model is busy: 1 answer is waiting for it on this server already; try again in "
        f"about {seconds} s; your place in line is kept for {seconds + 20} s.",
        "code": "queue_full",
        "waiting": 1,
        "kept": seconds + 20,
    }
    # The voter's two places are kept behind the one waiting, ahead of any newcomer.
    assert GENERATION_SLOTS.waiting() == 3
    assert not Battle.objects.exists()


def test_the_busy_page_links_back_to_the_arena_and_never_elsewhere(arena, annotator, full_line, client):
    """The page form's 503 page offers the way back to the page the person came from (its Referer, when
    it is this site's), and never to another site."""
    client.force_login(annotator)
    url = "/tasks/red-team/arena/battles/"
    body = {"prompt": "Name a river.", "client_token": str(uuid.uuid4())}
    back = client.post(url, body, HTTP_REFERER="http://testserver/tasks/red-team/arena/")
    assert back.status_code == 503
    assert (
        '<a href="http://testserver/tasks/red-team/arena/">Back to the page you came from</a>'
        in back.content.decode()
    )
    body["client_token"] = str(uuid.uuid4())
    elsewhere = client.post(url, body, HTTP_REFERER="https://evil.example/phish").content.decode()
    assert "evil.example" not in elsewhere and "Back to the page you came from" not in elsewhere
