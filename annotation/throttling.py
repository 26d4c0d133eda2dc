"""The throttles of the create page's helpers, from the page and the API together: uncertainty mode's
live confidence (scope ``confidence_probe``, rate ``DYNABENCH_CONFIDENCE_RATE``: each probe runs the
round's target models) and the annotation assistant's suggestions (scope ``assistant_suggestion``, rate
``DYNABENCH_SUGGESTION_RATE``: each one runs a generative model)."""

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


class SuggestionThrottle(ConfidenceThrottle):
    """At most ``DEFAULT_THROTTLE_RATES["assistant_suggestion"]`` suggestions per person (default
    ``20/min``)."""

    scope = "assistant_suggestion"
