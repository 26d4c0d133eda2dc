"""The throttle on uncertainty mode's live confidence (scope ``confidence_probe``, rate
``DYNABENCH_CONFIDENCE_RATE``): each probe runs the round's target models, so one account (or a script
with its token) asks at most so many a window, from the create page and the API together."""

from __future__ import annotations

import math

from core.api.throttling import PerUserRateThrottle


class ConfidenceThrottle(PerUserRateThrottle):
    """At most ``DEFAULT_THROTTLE_RATES["confidence_probe"]`` probes per person (default ``60/min``);
    keyed by user id. The rate is read on every request."""

    scope = "confidence_probe"

    def wait_seconds(self) -> int:
        """After ``allow_request`` said no: the whole seconds to wait (at least 1)."""
        return max(1, math.ceil(self.wait() or 1))
