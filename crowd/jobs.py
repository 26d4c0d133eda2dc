"""django-q2 jobs of the crowd app."""

from __future__ import annotations

from . import lifecycle

#: Registered by ``CrowdConfig.ready()``: ``abandon_expired_job`` every 5 minutes.
ABANDON_SCHEDULE = "abandon expired participations"


def abandon_expired_job() -> int:
    """Mark abandoned the active participations past their study's time limit (``ABANDON_SCHEDULE``);
    returns how many. The same conditional UPDATE as the lazy check, so each is abandoned once."""
    return lifecycle.abandon_expired()
