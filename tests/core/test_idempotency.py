"""The Idempotency-Key machinery (core/api/idempotency.py) on a throwaway view, and its record rules."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.test import APIRequestFactory, force_authenticate
from rest_framework.views import APIView

from core.api.idempotency import REPLAYED_HEADER, fingerprint, idempotent
from core.models import IdempotencyRecord

pytestmark = pytest.mark.django_db


class CountingView(APIView):
    """Answers 201 with a running number, so a replay is told apart from a second run."""

    calls = 0
    gate: threading.Event | None = None
    entered: threading.Event | None = None

    @idempotent
    def post(self, request):
        type(self).calls += 1
        if type(self).entered is not None:
            type(self).entered.set()
            type(self).gate.wait(10)
        if request.data.get("fail") == "400":
            raise exceptions.ValidationError({"name": ["bad"]})
        if request.data.get("fail") == "500":
            raise RuntimeError("crash")
        return Response({"call": type(self).calls, "echo": request.data.get("name")}, status=201)


@pytest.fixture(autouse=True)
def _reset_counter():
    CountingView.calls = 0
    CountingView.gate = None
    CountingView.entered = None


def _post(user, data, key=None, path="/api/thing/"):
    factory = APIRequestFactory()
    headers = {"HTTP_IDEMPOTENCY_KEY": key} if key is not None else {}
    request = factory.post(path, data, format="json", **headers)
    force_authenticate(request, user=user)
    return CountingView.as_view()(request)


def test_same_key_replays_status_and_body_without_running_again(annotator):
    first = _post(annotator, {"name": "a"}, key="k-1")
    second = _post(annotator, {"name": "a"}, key="k-1")
    assert first.status_code == second.status_code == 201
    assert first.data == {"call": 1, "echo": "a"}
    assert second.data == {"call": 1, "echo": "a"}
    assert second[REPLAYED_HEADER] == "true"
    assert CountingView.calls == 1


def test_no_key_runs_every_time(annotator):
    _post(annotator, {"name": "a"})
    assert _post(annotator, {"name": "a"}).data["call"] == 2


def test_key_is_per_caller(annotator, validator):
    _post(annotator, {"name": "a"}, key="shared")
    assert _post(validator, {"name": "a"}, key="shared").data["call"] == 2


def test_same_key_other_body_is_422(annotator):
    _post(annotator, {"name": "a"}, key="k-2")
    response = _post(annotator, {"name": "b"}, key="k-2")
    assert response.status_code == 422
    assert "different request" in response.data["detail"]
    assert CountingView.calls == 1


def test_same_key_other_endpoint_is_422(annotator):
    _post(annotator, {"name": "a"}, key="k-3", path="/api/one/")
    assert _post(annotator, {"name": "a"}, key="k-3", path="/api/two/").status_code == 422


def test_key_order_of_json_members_does_not_matter(annotator):
    factory = APIRequestFactory()
    one = factory.post("/x/", '{"a": 1, "b": [1, 2]}', content_type="application/json")
    two = factory.post("/x/", '{ "b": [1,2], "a": 1 }', content_type="application/json")
    from rest_framework.parsers import JSONParser
    from rest_framework.request import Request

    assert fingerprint(Request(one, parsers=[JSONParser()])) == fingerprint(
        Request(two, parsers=[JSONParser()])
    )


def test_in_progress_duplicate_is_409(annotator):
    """A pre-inserted in-progress record stands for a first request that is still running."""
    response = _post(annotator, {"name": "a"}, key="busy")
    IdempotencyRecord.objects.filter(key="busy").update(state="in_progress")
    response = _post(annotator, {"name": "a"}, key="busy")
    assert response.status_code == 409
    assert "still being processed" in response.data["detail"]
    assert CountingView.calls == 1


def test_stale_in_progress_record_is_taken_over(annotator, settings):
    settings.DYNABENCH_IDEMPOTENCY_STALE_SECONDS = 60
    _post(annotator, {"name": "a"}, key="dead")
    IdempotencyRecord.objects.filter(key="dead").update(
        state="in_progress", updated_at=timezone.now() - timedelta(seconds=61)
    )
    response = _post(annotator, {"name": "a"}, key="dead")
    assert response.status_code == 201 and response.data["call"] == 2
    assert IdempotencyRecord.objects.get(key="dead").state == "done"


def test_expired_record_is_forgotten(annotator, settings):
    settings.DYNABENCH_IDEMPOTENCY_TTL_SECONDS = 3600
    _post(annotator, {"name": "a"}, key="old")
    IdempotencyRecord.objects.filter(key="old").update(created_at=timezone.now() - timedelta(hours=2))
    assert _post(annotator, {"name": "other"}, key="old").data == {"call": 2, "echo": "other"}


def test_raised_error_releases_the_key(annotator):
    assert _post(annotator, {"fail": "400"}, key="e").status_code == 400
    assert not IdempotencyRecord.objects.filter(key="e").exists()
    assert _post(annotator, {"fail": "400"}, key="e").status_code == 400
    assert CountingView.calls == 2


def test_crash_releases_the_key(annotator):
    with pytest.raises(RuntimeError):
        _post(annotator, {"fail": "500"}, key="c")
    assert not IdempotencyRecord.objects.filter(key="c").exists()


@pytest.mark.parametrize("key", ["", "x" * 256, "é", "a\tb"])
def test_malformed_key_is_400(annotator, key):
    response = _post(annotator, {"name": "a"}, key=key)
    assert response.status_code == 400
    assert "Idempotency-Key" in response.data
    assert CountingView.calls == 0


def test_longest_key_accepted(annotator):
    assert _post(annotator, {"name": "a"}, key="k" * 255).status_code == 201


@pytest.mark.django_db(transaction=True)
def test_concurrent_duplicate_gets_409_while_first_runs(django_user_model):
    """Two threads, one key: the second arrives while the first is inside the handler."""
    user = django_user_model.objects.create_user(username="racer", password="x")
    CountingView.gate = threading.Event()
    CountingView.entered = threading.Event()
    results = {}

    def first():
        try:
            results["first"] = _post(user, {"name": "a"}, key="race")
        finally:
            connection.close()

    thread = threading.Thread(target=first)
    thread.start()
    assert CountingView.entered.wait(10)
    CountingView.entered = None  # the second request must not wait at the gate
    try:
        second = _post(user, {"name": "a"}, key="race")
    finally:
        CountingView.gate.set()
        thread.join(10)
    assert second.status_code == 409
    assert results["first"].status_code == 201
    third = _post(user, {"name": "a"}, key="race")
    assert third.status_code == 201 and third.data == {"call": 1, "echo": "a"}
