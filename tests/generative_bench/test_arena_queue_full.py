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
    """The line bounded at 1 waiter and full: one generation holds the slot, one waits."""
    with full_generation_line(1):
        yield


def test_a_battle_beyond_the_bound_is_a_503_and_nothing_is_stored(arena, annotator, full_line):
    refused = client_for(annotator).post(
        "/api/tasks/red-team/battles/",
        {"prompt": "Name a river.", "client_token": str(uuid.uuid4())},
        format="json",
    )
    seconds = GENERATION_SLOTS.retry_after()
    assert (refused.status_code, refused["Retry-After"]) == (503, str(seconds))
    assert refused.json() == {
        "detail": f"The model is busy: 1 answer is waiting for it on this server already; try again in "
        f"about {seconds} s.",
        "code": "queue_full",
        "waiting": 1,
    }
    assert not Battle.objects.exists()
