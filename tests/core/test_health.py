"""/health/ answers 200 when the database, the cache, the broker and the open rounds' target files are
usable, and 503 naming what is not. Unreachable services are simulated on loopback port 9, where nothing
listens (the discard port), so no traffic leaves this machine."""

from __future__ import annotations

import shutil

import pytest
from django.test import override_settings

from tests.factories.models_registry import registered_target

DEAD_REDIS = "redis://127.0.0.1:9/0"


def _health(client):
    return client.get("/health/?format=json")


@pytest.mark.django_db
def test_healthy_service_answers_200_with_every_check_ok(client, tiny_registered_model):
    response = _health(client)
    assert response.status_code == 200
    body = response.json()
    assert set(body.values()) == {"OK"}
    names = " ".join(body)
    for part in ("Database", "SharedCache", "JobBroker", "TargetModelFiles"):
        assert part in names


@pytest.mark.django_db
def test_a_target_whose_files_are_gone_makes_it_503_naming_the_model(client, tiny_registered_model):
    shutil.rmtree(tiny_registered_model.path)
    response = _health(client)
    assert response.status_code == 503
    [problem] = [v for k, v in response.json().items() if "TargetModelFiles" in k]
    assert problem == (
        f"Unavailable: {tiny_registered_model.task.slug}/{tiny_registered_model.name}: "
        "the model directory does not exist on the server (its files are gone)"
    )
    # Other parts are still reported as fine: the answer says which part is down.
    assert [v for k, v in response.json().items() if "Database" in k] == ["OK"]
    # Every format says 503, not the library's 500.
    assert client.get("/health/", HTTP_ACCEPT="text/plain").status_code == 503
    assert client.get("/health/", HTTP_ACCEPT="text/html").status_code == 503


@pytest.mark.django_db
def test_a_closed_rounds_missing_target_does_not_matter(client, tiny_registered_model, hate_round):
    hate_round.is_closed = True
    hate_round.save(update_fields=["is_closed"])
    shutil.rmtree(tiny_registered_model.path)
    assert _health(client).status_code == 200


@pytest.mark.django_db
def test_a_target_of_an_earlier_round_is_not_checked(client, hate_task, hate_round, tiny_model_dir, tmp_path):
    from tests.factories.tasks import open_round

    registered_target(task=hate_task, round_=hate_round, name="old", path=tiny_model_dir, description="r1")
    open_round(hate_task, 2)  # round 2 is current now, with no target
    shutil.rmtree(tiny_model_dir)
    assert _health(client).status_code == 200


@pytest.mark.django_db
def test_unreachable_redis_broker_makes_it_503(client, settings):
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "redis": DEAD_REDIS}
    response = _health(client)
    assert response.status_code == 503
    [problem] = [v for k, v in response.json().items() if "JobBroker" in k]
    assert problem == "Unavailable: Redis broker unreachable: ConnectionError"


@pytest.mark.django_db
def test_unreachable_redis_cache_makes_it_503(client):
    dead_cache = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": DEAD_REDIS}
    }
    with override_settings(CACHES=dead_cache):  # Django's setting_changed handler resets the caches
        response = _health(client)
    assert response.status_code == 503
    [problem] = [v for k, v in response.json().items() if "Cache" in k]
    assert problem == "Unavailable: cache unreachable: ConnectionError"


@pytest.mark.django_db
def test_live_redis_broker_and_cache_are_ok(client, settings):
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "redis": "redis://127.0.0.1:6379/15"}
    live_cache = {
        "default": {"BACKEND": "core.cache.FailSoftRedisCache", "LOCATION": "redis://127.0.0.1:6379/15"}
    }
    with override_settings(CACHES=live_cache):
        response = _health(client)
    assert response.status_code == 200, response.content


@pytest.mark.django_db
def test_health_is_plain_text_on_request(client):
    response = client.get("/health/", HTTP_ACCEPT="text/plain")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    assert response["Cache-Control"].startswith("max-age=0")


@pytest.mark.django_db
def test_a_remote_chat_target_has_no_files_to_check(client, db):
    """A red-teaming round whose target is a chat server (no path, no files here) is healthy: the server is
    not called either (each probe would send it traffic)."""
    from tests.factories.red_team import make_remote_red_team_round

    make_remote_red_team_round("http://127.0.0.1:9/v1")
    assert _health(client).status_code == 200
