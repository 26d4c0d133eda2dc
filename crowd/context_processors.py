"""``study_progress``: the banner of a participant in an active study, on every page (``base.html``)."""

from __future__ import annotations

from django.utils import timezone

from . import selectors


def study_progress(request) -> dict:
    """``{"study_progress": [{"study": Study, "progress": selectors.Progress}, ...]}``: one entry per active
    participation of the signed-in user (none for anyone else; one query for a user who has none)."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"study_progress": []}
    now = timezone.now()
    return {
        "study_progress": [
            {"study": p.study, "progress": selectors.progress_of(p)}
            for p in selectors.active_participations_of(user)
            if now <= p.deadline  # past its time limit: abandoned, whether or not that is recorded yet
        ]
    }
