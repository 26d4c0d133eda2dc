"""The throttle on red-teaming messages (scope ``red_team_turn``, rate ``DYNABENCH_RED_TEAM_TURN_RATE``):
each message calls the target model, which costs the owner compute or money, so one account (or a
script with its token) sends at most so many a window, from the page and the API together, as ``/v1``
limits its chat completions."""

from __future__ import annotations

import math

from core.api.throttling import PerUserRateThrottle

SCOPE = "red_team_turn"


class TurnThrottle(PerUserRateThrottle):
    """At most ``DEFAULT_THROTTLE_RATES["red_team_turn"]`` messages per user (e.g. ``30/min``), counted
    per request whatever its answer; keyed by user id (both entry points refuse the anonymous first). The
    rate is read on every request, so a changed setting applies at once."""

    scope = SCOPE

    def refusal(self) -> tuple[str, int]:
        """After ``allow_request`` said no: the writer's message and the whole seconds to wait (at least 1)."""
        wait = max(1, math.ceil(self.wait() or 1))
        return (
            f"You are sending messages faster than this server allows ({self.rate} per person); "
            f"try again in {wait} s. Your message is still in the box.",
            wait,
        )
