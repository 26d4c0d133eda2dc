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
from django.conf import settings
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


class HealthView(HealthCheckView):
    """django-health-check's view answering 503 instead of 500 when a check fails."""

    def render_to_response(self, context, **response_kwargs):
        response = super().render_to_response(context, **response_kwargs)
        return _service_unavailable(response)

    def render_to_response_json(self, status):
        return _service_unavailable(super().render_to_response_json(status))

    def render_to_response_text(self, status):
        return _service_unavailable(super().render_to_response_text(status))


def _service_unavailable(response):
    if response.status_code == 500:
        response.status_code = 503
    return response
