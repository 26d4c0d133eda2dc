"""The throttle on explanations through the API (scope ``model_explain``, rate ``DYNABENCH_EXPLAIN_RATE``).

An explanation costs ``attributions.N_STEPS`` forward and backward passes per text (seconds of CPU for a
long one), so the rate counts explained TEXTS, not requests: ``"10/min"`` lets a user explain 10 texts
a minute, e.g. one call of 8 inputs and one of 2. Counting is atomic (``cache.incr``), so parallel
calls cannot all slip through on the same empty count; the window is fixed (it restarts every
``duration`` seconds), so at a window's edge a user may get up to twice the rate in a short burst.
While the cache is unreachable the count cannot be kept and explanations are allowed (as for the
other throttles, docs/deployment.md, "When Redis is down").
"""

from __future__ import annotations

import logging
import math
import time

from django.core.cache import cache
from rest_framework.exceptions import Throttled, ValidationError
from rest_framework.settings import api_settings
from rest_framework.throttling import BaseThrottle, SimpleRateThrottle

logger = logging.getLogger(__name__)

SCOPE = "model_explain"


class ExplainThrottle:
    """``charge(request, cost)``: count ``cost`` explained texts for the caller, or raise ``Throttled``.

    Keyed by user id (by client address for the anonymous). The rate is read from
    ``REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["model_explain"]`` on every call (no rate: no limit).
    """

    def __init__(self, view=None) -> None:
        self.view = view

    def rate(self) -> tuple[int | None, int | None]:
        """``(texts, seconds)`` of the configured rate, or ``(None, None)`` for none."""
        return SimpleRateThrottle.parse_rate(None, api_settings.DEFAULT_THROTTLE_RATES.get(SCOPE))

    def charge(self, request, cost: int) -> None:
        """Count ``cost`` (>= 1) texts against the caller's window.

        Raises:
            Throttled: (429 with ``Retry-After``: the seconds until the window restarts) when the
                window's count plus ``cost`` would exceed the rate; a refused call counts nothing.
            ValidationError: (400 on ``explain``) ``cost`` alone exceeds the rate: no wait would help.
        """
        limit, duration = self.rate()
        if limit is None or duration is None:
            return
        user = getattr(request, "user", None)
        ident = user.pk if user is not None and user.is_authenticated else BaseThrottle().get_ident(request)
        now = time.time()
        window = int(now // duration)
        key = f"throttle_{SCOPE}_{ident}_{duration}_{window}"
        wait = max(1, math.ceil((window + 1) * duration - now))
        if cost > limit:
            raise ValidationError(
                {
                    "explain": [
                        f"At most {limit} texts can be explained per {_period(duration)} on this server "
                        f"(this call has {cost}); send fewer inputs."
                    ]
                }
            )
        try:
            cache.add(key, 0, duration + 1)
            count = cache.incr(key, cost)
        except Exception:  # noqa: BLE001 - the cache is down (or the key expired just now): allow
            logger.warning("explain throttle: the count could not be kept", exc_info=True)
            return
        if count > limit:
            try:
                cache.decr(key, cost)  # the refused call uses up nothing
            except Exception:  # noqa: BLE001
                logger.warning("explain throttle: the refused count could not be undone", exc_info=True)
            left = max(0, limit - (count - cost))
            raise Throttled(
                wait=wait,
                detail=f"Explanations throttled: at most {limit} texts per {_period(duration)} per user "
                f"(DYNABENCH_EXPLAIN_RATE); this call asks for {cost} and {left} are left in this window.",
            )


def _period(seconds: int) -> str:
    return {1: "second", 60: "minute", 3600: "hour", 86400: "day"}.get(seconds, f"{seconds} s")
