"""The Redis cache of the production profile fails soft (core/cache.py): with Redis unreachable
(loopback port 9, where nothing listens) reads give the default and writes do nothing, so log-ins and
throttled API writes keep working; with Redis up, two cache objects (two processes) share counts."""

from __future__ import annotations

import threading

import pytest
import redis
from django.test import override_settings

import core.cache
from core.cache import FailSoftRedisCache
from tests.helpers.api import client_for

DEAD = "redis://127.0.0.1:9/0"
LIVE = "redis://127.0.0.1:6379/15"


@pytest.fixture(autouse=True)
def fresh_process_state(monkeypatch):
    """Each test starts as a new process would: no pause after a failure, no connections."""
    monkeypatch.setattr(core.cache, "_PAUSES", {})
    monkeypatch.setattr(core.cache, "_SHARED", {})


def _cache(location: str) -> FailSoftRedisCache:
    return FailSoftRedisCache(location, {"OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1}})


def test_unreachable_redis_reads_default_and_writes_nothing():
    cache = _cache(DEAD)
    assert cache.get("k", "fallback") == "fallback"
    assert cache.set("k", 1) is None
    assert cache.add("k", 1) is True  # a lock taken, as far as callers know
    assert cache.get_many(["a", "b"]) == {}
    assert cache.has_key("k") is False


def test_after_a_failure_redis_is_skipped_for_a_pause(monkeypatch):
    cache = _cache(DEAD)
    calls = []
    real_get = cache._cache.get

    def counting_get(*args, **kwargs):
        calls.append(args)
        return real_get(*args, **kwargs)

    monkeypatch.setattr(cache._cache, "get", counting_get)
    assert cache.get("k") is None
    assert cache.get("k") is None
    assert len(calls) == 1


def test_strict_roundtrip_raises_for_an_unreachable_redis():
    with pytest.raises(redis.ConnectionError):
        _cache(DEAD).strict_roundtrip()


def test_two_caches_on_one_redis_share_values():
    writer, reader = _cache(LIVE), _cache(LIVE)
    writer.set("shared-count", [1, 2, 3], 30)
    assert reader.get("shared-count") == [1, 2, 3]
    reader.strict_roundtrip()
    writer.delete("shared-count")
    assert reader.get("shared-count") is None


def test_the_cache_objects_of_many_request_threads_share_one_connection():
    # Django makes a cache object per thread and async context; under ASGI each request has a thread.
    clients = []

    def one_request(n: int) -> None:
        cache = _cache(LIVE)
        cache.set(f"thread-{n}", n, 30)
        assert cache.get(f"thread-{n}") == n
        cache.delete(f"thread-{n}")
        clients.append(cache._cache.get_client())

    for n in range(5):
        thread = threading.Thread(target=one_request, args=(n,))
        thread.start()
        thread.join()
    assert len({id(client) for client in clients}) == 1
    assert clients[0].connection_pool._created_connections == 1


def test_a_failure_pauses_the_cache_objects_made_after_it(monkeypatch):
    calls = []
    real_get = redis.Redis.get

    def counting_get(self, *args, **kwargs):
        calls.append(args)
        return real_get(self, *args, **kwargs)

    monkeypatch.setattr(redis.Redis, "get", counting_get)
    assert _cache(DEAD).get("k") is None  # tried, failed: the pause starts
    assert _cache(DEAD).get("k") is None  # another request's cache object: skipped
    assert len(calls) == 1


DEAD_CACHES = {"default": {"BACKEND": "core.cache.FailSoftRedisCache", "LOCATION": DEAD}}


@pytest.mark.django_db
def test_log_in_works_while_redis_is_down(client, annotator, password):
    with override_settings(CACHES=DEAD_CACHES):
        response = client.post("/accounts/login/", {"login": annotator.username, "password": password})
    assert response.status_code == 302
    assert client.session["_auth_user_id"] == str(annotator.pk)


@pytest.mark.django_db
def test_throttled_example_writes_work_while_redis_is_down(annotator, hate_task, rule_model):
    with override_settings(CACHES=DEAD_CACHES):
        response = client_for(annotator).post(
            f"/api/tasks/{hate_task.slug}/examples/",
            {"statement": "they are not our friends", "label": "hateful"},
            format="json",
        )
    assert response.status_code == 201, response.content
