"""``/v1/chat/completions`` beyond the process's bound on the line for a generation slot
(engine/runtime/slots.py, "The line is bounded"): 503 with ``Retry-After`` in OpenAI's error
shape, streamed or not, at once instead of holding a server thread while it waits."""

from __future__ import annotations

import json

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from engine.runtime.slots import GENERATION_SLOTS
from tests.factories.red_team import make_red_team_round
from tests.helpers.slots import full_generation_line


@pytest.fixture
def owner_client(db, smollm2_dir, owner) -> APIClient:
    """The owner of the red-teaming task ``red-team`` (SmolLM2, unpublished: its owner may use it), with
    their bearer token."""
    make_red_team_round(smollm2_dir).task.owners.add(owner)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {Token.objects.get_or_create(user=owner)[0].key}")
    return client


@pytest.fixture
def full_line():
    """The line bounded at 3 waiters and full: one generation holds the slot, three wait."""
    with full_generation_line(3):
        yield


@pytest.mark.parametrize("stream", [False, True])
def test_beyond_the_bound_v1_answers_503_with_retry_after_in_openais_shape(owner_client, full_line, stream):
    body = {"model": "red-team/smollm2", "messages": [{"role": "user", "content": "Hi"}], "stream": stream}
    response = owner_client.post("/v1/chat/completions", json.dumps(body), content_type="application/json")
    seconds = GENERATION_SLOTS.retry_after()
    assert (response.status_code, response["Retry-After"]) == (503, str(seconds))
    assert response.json() == {
        "error": {
            "message": f"The model is busy: 3 answers are waiting for it on this server already; try again "
            f"in about {seconds} s.",
            "type": "server_error",
            "param": None,
            "code": "queue_full",
        }
    }
    assert len(GENERATION_SLOTS._line) == 3  # nothing of the refused request is left in line
