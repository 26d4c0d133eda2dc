"""The throttle on chat completions (scope ``openai_chat``, rate ``DYNABENCH_OPENAI_RATE``)."""

from __future__ import annotations

from rest_framework.settings import api_settings
from rest_framework.throttling import SimpleRateThrottle

SCOPE = "openai_chat"


class ChatCompletionThrottle(SimpleRateThrottle):
    """At most ``DEFAULT_THROTTLE_RATES["openai_chat"]`` chat completions per user (e.g. ``30/min``),
    counted per request whatever its answer. Keyed by user id (the endpoint refuses the anonymous before
    it counts). The rate is read on every request, so a changed setting applies at once; over it the
    view answers 429 with ``Retry-After`` (seconds until the oldest counted request leaves the window).
    """

    scope = SCOPE

    def get_rate(self) -> str | None:
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)

    def get_cache_key(self, request, view) -> str:
        ident = request.user.pk if request.user and request.user.is_authenticated else self.get_ident(request)
        return self.cache_format % {"scope": self.scope, "ident": ident}
