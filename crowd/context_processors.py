"""``study_progress``: the banner of a participant in a study, on every page (``base.html``) and in the
partial the pages' scripts fetch again after sending work in place (``views.progress``)."""

from __future__ import annotations

from datetime import UTC

from django.urls import reverse
from django.utils import timezone

from validation import selectors as validation_selectors
from validation.gold import selectors as gold_selectors

from . import selectors
from .services import PLATFORM_NAMES, round_end_phrase

#: The page where a participant with verdicts due may find nothing to validate.
VALIDATE_VIEW = "validation:validate"


def _on_validate_page(request, participation) -> bool:
    """Whether ``request`` is the validate page of the participation's task (a GET)."""
    match = getattr(request, "resolver_match", None)
    return (
        request.method == "GET"
        and match is not None
        and match.view_name == VALIDATE_VIEW
        and match.kwargs.get("slug") == participation.study.round.task.slug
    )


def _nothing_to_validate(request, participation) -> bool:
    """Whether ``request`` is the validate page of the participation's task showing nothing: no example of
    the study's round is open to this user and none (ordinary or gold) is reserved for them (three queries,
    on that page only)."""
    if not _on_validate_page(request, participation):
        return False
    round_ = participation.study.round
    if validation_selectors.live_claim_of(round_, request.user) is not None:
        return False
    if gold_selectors.live_gold_claim_of(round_, request.user) is not None:
        return False  # a gold item is shown
    return not validation_selectors.queue_for(round_, request.user).exists()


def study_progress(request) -> dict:
    """``{"study_progress": [entry, ...]}``, one entry per participation the banner shows
    (``selectors.banner_participations``: the running ones, else the newest one if it ended without the
    participant's finishing it); none for anyone else (one query for a user who has no participation).

    Each entry: ``study``, ``participation``, ``progress`` (``selectors.Progress``), ``state``
    (``running``, ``abandoned``, ``ended_early``, ``ended``), ``platform_name``, ``deadline_utc`` (the
    time limit's end, ``"HH:MM"`` UTC), ``round_end`` (``services.round_end_phrase`` for an ended study,
    else ""), and for a running participation ``validate_next`` (the validate page's URL when the
    examples are written and verdicts are still due, unless this is that page; else "") and ``waiting``
    (verdicts due, and this is the validate page with nothing to validate: the banner then says that
    more examples will arrive).
    """
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"study_progress": []}
    entries = []
    for participation, state in selectors.banner_participations(user, timezone.now()):
        study = participation.study
        progress = selectors.progress_of(participation)
        entry = {
            "study": study,
            "participation": participation,
            "progress": progress,
            "state": state,
            "platform_name": PLATFORM_NAMES.get(study.platform, "the platform"),
            "deadline_utc": participation.deadline.astimezone(UTC).strftime("%H:%M"),
            "round_end": round_end_phrase(study) if state in ("ended_early", "ended") else "",
            "validate_next": "",
            "waiting": False,
        }
        if state == "running":
            examples_done = progress.examples >= progress.examples_required
            due = progress.validations_due > 0 and examples_done
            if due and progress.examples_required and not _on_validate_page(request, participation):
                entry["validate_next"] = reverse(VALIDATE_VIEW, args=[study.round.task.slug])
            entry["waiting"] = due and _nothing_to_validate(request, participation)
        entries.append(entry)
    return {"study_progress": entries}
