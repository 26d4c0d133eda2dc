"""``study_progress``: the banner of a participant in an active study, on every page (``base.html``)."""

from __future__ import annotations

from django.utils import timezone

from validation import gold_selectors
from validation import selectors as validation_selectors

from . import selectors

#: The page where a participant with verdicts due may find nothing to validate.
VALIDATE_VIEW = "validation:validate"


def _nothing_to_validate(request, participation) -> bool:
    """Whether ``request`` is the validate page of the participation's task showing nothing: no example of
    the study's round is open to this user and none (ordinary or gold) is reserved for them (three queries,
    on that page only)."""
    match = getattr(request, "resolver_match", None)
    if request.method != "GET" or match is None or match.view_name != VALIDATE_VIEW:
        return False
    study = participation.study
    if match.kwargs.get("slug") != study.round.task.slug:
        return False
    round_ = study.round
    if validation_selectors.live_claim_of(round_, request.user) is not None:
        return False
    if gold_selectors.live_gold_claim_of(round_, request.user) is not None:
        return False  # a gold item is shown
    return not validation_selectors.queue_for(round_, request.user).exists()


def study_progress(request) -> dict:
    """``{"study_progress": [{"study": Study, "progress": selectors.Progress, "waiting": bool}, ...]}``: one
    entry per active participation of the signed-in user (none for anyone else; one query for a user who
    has none). ``waiting``: the examples are written, verdicts are still due, and this is the validate page
    with nothing to validate (the banner then says that more examples will arrive)."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"study_progress": []}
    now = timezone.now()
    entries = []
    for p in selectors.active_participations_of(user):
        if now > p.deadline:
            continue  # past its time limit: abandoned, whether or not that is recorded yet
        progress = selectors.progress_of(p)
        waiting = (
            progress.validations_due > 0
            and progress.examples >= progress.examples_required
            and _nothing_to_validate(request, p)
        )
        entries.append({"study": p.study, "progress": progress, "waiting": waiting})
    return {"study_progress": entries}
