"""The throttle on chat completions (scope ``openai_chat``, rate ``DYNABENCH_OPENAI_RATE``)."""

from __future__ import annotations

from core.api.throttling import PerUserRateThrottle

SCOPE = "openai_chat"


class ChatCompletionThrottle(PerUserRateThrottle):
    """At most ``DEFAULT_THROTTLE_RATES["openai_chat"]`` chat completions per user (e.g. ``30/min``),
    counted per request whatever its answer. Keyed by user id (the endpoint refuses the anonymous before
    it counts). The rate is read on every request, so a changed setting applies at once; over it the
    view answers 429 with ``Retry-After`` (seconds until the oldest counted request leaves the window).
    """

    scope = SCOPE
