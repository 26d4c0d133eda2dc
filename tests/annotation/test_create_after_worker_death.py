"""A web worker killed after the example committed but before its response was stored leaves the
Idempotency-Key "in progress"; the retry that takes it over must find the stored example, not write it
twice (annotation/api.py, ``client_token_of``)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import Example
from core.models import IdempotencyRecord
from tests.helpers.api import client_for

CREATE = "/api/tasks/hate-speech/examples/"
BODY = {"statement": "they are not our friends", "label": "hateful"}


@pytest.mark.django_db
def test_a_taken_over_key_finds_the_example_already_stored(annotator, rule_model):
    client = client_for(annotator)
    first = client.post(CREATE, BODY, format="json", HTTP_IDEMPOTENCY_KEY="retry-me-1")
    assert first.status_code == 201
    # The worker died before storing the response: the record is still in progress, and stale.
    IdempotencyRecord.objects.filter(key="retry-me-1").update(
        state=IdempotencyRecord.State.IN_PROGRESS,
        response_body=None,
        updated_at=timezone.now() - timedelta(hours=1),
    )
    retry = client.post(CREATE, BODY, format="json", HTTP_IDEMPOTENCY_KEY="retry-me-1")
    assert retry.status_code == 201
    assert retry.json()["id"] == first.json()["id"]
    assert Example.objects.filter(annotator=annotator).count() == 1


@pytest.mark.django_db
def test_different_keys_write_different_examples(annotator, rule_model):
    client = client_for(annotator)
    a = client.post(CREATE, BODY, format="json", HTTP_IDEMPOTENCY_KEY="key-a").json()["id"]
    b = client.post(CREATE, BODY, format="json", HTTP_IDEMPOTENCY_KEY="key-b").json()["id"]
    no_key = client.post(CREATE, BODY, format="json").json()["id"]
    assert len({a, b, no_key}) == 3


@pytest.mark.django_db
def test_a_replay_carries_the_location_of_the_created_example(annotator, rule_model):
    client = client_for(annotator)
    first = client.post(CREATE, BODY, format="json", HTTP_IDEMPOTENCY_KEY="where-is-it")
    replay = client.post(CREATE, BODY, format="json", HTTP_IDEMPOTENCY_KEY="where-is-it")
    assert replay["Idempotent-Replayed"] == "true"
    assert replay["Location"] == first["Location"] == f"/api/examples/{first.json()['id']}/"
