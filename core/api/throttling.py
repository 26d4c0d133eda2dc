"""Per-user request throttles of the API: ``PerUserRateThrottle`` (the rate read on every request, keyed
by user id) and the throttle on example creation (scope ``example_create``, rate from
``DYNABENCH_CREATE_RATE``). The chat completions' (``openai_chat``) and red-teaming messages'
(``red_team_turn``) throttles are its subclasses in their apps."""

from __future__ import annotations

from rest_framework.settings import api_settings
from rest_framework.throttling import SimpleRateThrottle


class PerUserRateThrottle(SimpleRateThrottle):
    """At most ``DEFAULT_THROTTLE_RATES[scope]`` requests per caller (e.g. ``30/min``); a subclass sets
    ``scope``.

    Keyed by user id (by client address for the anonymous, whom the throttled endpoints refuse anyway).
    The rate is read on every request rather than at import, so a changed setting (tests,
    ``override_settings``) applies at once. Over the limit the API answers 429 with ``Retry-After``.
    """

    def get_rate(self) -> str | None:
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)

    def get_cache_key(self, request, view) -> str:
        ident = request.user.pk if request.user and request.user.is_authenticated else self.get_ident(request)
        return self.cache_format % {"scope": self.scope, "ident": ident}


class ExampleCreateThrottle(PerUserRateThrottle):
    """At most ``DEFAULT_THROTTLE_RATES["example_create"]`` example POSTs per caller (e.g. ``120/min``)."""

    scope = "example_create"
