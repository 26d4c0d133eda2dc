"""The throttle on example creation (scope ``example_create``, rate from ``DYNABENCH_CREATE_RATE``)."""

from __future__ import annotations

from rest_framework.settings import api_settings
from rest_framework.throttling import SimpleRateThrottle


class ExampleCreateThrottle(SimpleRateThrottle):
    """At most ``DEFAULT_THROTTLE_RATES["example_create"]`` example POSTs per caller (e.g. ``120/min``).

    Keyed by user id (by client address for the anonymous, who are refused anyway). The rate is read
    on every request rather than at import, so a changed setting (tests, ``override_settings``) applies
    at once. Over the limit the API answers 429 with ``Retry-After``.
    """

    scope = "example_create"

    def get_rate(self) -> str | None:
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)

    def get_cache_key(self, request, view) -> str:
        ident = request.user.pk if request.user and request.user.is_authenticated else self.get_ident(request)
        return self.cache_format % {"scope": self.scope, "ident": ident}
