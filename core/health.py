"""``/health/``: is this process able to serve? (django-health-check; docs/deployment.md, "Health").

200 when every check passes, 503 naming each failing part otherwise (the library's default is 500;
load balancers and orchestrators read 503 as "take out of rotation"). JSON with ``?format=json`` or
``Accept: application/json``: ``{"<check>": "OK" | "<what is wrong>"}``.

Checks: the database (a ``SELECT 1``), the cache (write, read, delete a key), the job broker (Redis
``PING`` when ``REDIS_URL`` is set; the ORM broker is the database, checked already) and, wired in
``dynabench.urls``, the open rounds' target model files (``models_registry.health``).
"""

from __future__ import annotations

import dataclasses

import redis
from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.cache import caches
from health_check.base import HealthCheck
from health_check.exceptions import ServiceUnavailable
from health_check.views import HealthCheckView


@dataclasses.dataclass
class JobBroker(HealthCheck):
    """django-q2's broker answers: Redis ``PING`` within 2 s, or, on the ORM broker, nothing more to
    check than the database.

    Raises:
        ServiceUnavailable: "Redis broker unreachable: <error class>" (no address: the message is shown
            to anyone who asks).
    """

    def run(self) -> None:
        url = settings.Q_CLUSTER.get("redis")
        if not url:
            return
        client = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2)
        try:
            client.ping()
        except redis.RedisError as exc:
            raise ServiceUnavailable(f"Redis broker unreachable: {type(exc).__name__}") from exc
        finally:
            client.close()


@dataclasses.dataclass
class SharedCache(HealthCheck):
    """The default cache stores and gives back a value. For the fail-soft Redis cache
    (``core.cache``), which hides outages from the rest of the site, the probe goes straight to
    Redis; other backends are probed with ``set``/``get``/``delete``.

    Raises:
        ServiceUnavailable: "cache unreachable: <error class>" or "cache gave back another value".
    """

    async def run(self) -> None:
        await sync_to_async(self._roundtrip, thread_sensitive=True)()

    def _roundtrip(self) -> None:
        cache = caches["default"]
        try:
            if hasattr(cache, "strict_roundtrip"):
                cache.strict_roundtrip()
                return
            cache.set("health:probe", "ok", 10)
            if cache.get("health:probe") != "ok":
                raise ValueError("the cache gave back another value than the one written")
            cache.delete("health:probe")
        except redis.RedisError as exc:
            raise ServiceUnavailable(f"cache unreachable: {type(exc).__name__}") from exc
        except ValueError as exc:
            raise ServiceUnavailable("cache gave back another value") from exc


class HealthView(HealthCheckView):
    """django-health-check's view answering 503 instead of 500 when a check fails, in every format."""

    async def get(self, request, *args, **kwargs):
        response = await super().get(request, *args, **kwargs)
        if response.status_code == 500:  # the library's "a check failed"
            response.status_code = 503
        return response
