"""Crowd pages: the entry link, consent, completion and returning a study (docs/crowd.md, "Crowd studies").

Nobody is recognised by a header, a cookie value or an id alone: the entry link must carry the study's
key, and a participant is known afterwards only by the session the entry page logged them in with.
Every crowd page may be framed by MTurk (ExternalQuestion); the completion page may post to MTurk.
"""

from __future__ import annotations

from django.contrib.auth import login, logout
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods

from . import selectors, services
from .framing import SESSION_FLAG, crowd_page
from .links import BadEntry, key_matches, parse_entry
from .models import Participation, Platform, Study

PROLIFIC_COMPLETE = "https://app.prolific.com/submissions/complete?cc={code}"
#: Session key: the studies this (signed-out) browser has just returned, for a repeated POST.
RETURNED_KEY = "crowd_returned_studies"


def _study_or_404(public_id) -> Study:
    return get_object_or_404(Study.objects.select_related("round__task"), public_id=public_id)


def _participation_or_404(request, study: Study) -> Participation:
    """The signed-in user's participation in ``study``; 404 for anyone else (the link logs people in)."""
    if not request.user.is_authenticated:
        raise Http404("No such page.")
    participation = (
        Participation.objects.select_related("study__round__task")
        .filter(study=study, user=request.user)
        .first()
    )
    if participation is None:
        raise Http404("No such page.")
    return participation


def work_url(participation: Participation) -> str:
    """Where a participant works next: the create page while examples are wanted, else the validate page."""
    study = participation.study
    slug = study.round.task.slug
    if study.examples_required and selectors.progress_of(participation).examples < study.examples_required:
        return reverse("annotation:create", args=[slug])
    return reverse("validation:validate", args=[slug])


def _refused(request, study: Study, message: str, *, status: int, title: str = "You cannot take part"):
    return render(
        request, "crowd/refused.html", {"study": study, "title": title, "message": message}, status=status
    )


@require_GET
@crowd_page
def enter(request, public_id):
    """``GET /study/<uuid>/enter/?key=<entry_key>&<platform ids>``: log the participant in and send them on.

    403 without the right key and 400 naming a missing or malformed id (nothing is created either way);
    MTurk's preview shows the task and consent read-only; a closed or full study, a freed place, or an
    existing participation opened from another platform session (``services.enter``) answers 409 with a
    page saying so. Someone else signed in in this browser is logged out first; the participant signed in
    already (a second tab) keeps their session (no new login, so no new CSRF token).
    """
    study = _study_or_404(public_id)
    if not key_matches(study, request.GET.get("key")):
        return _refused(
            request,
            study,
            "This link is not valid: its key is missing or wrong.",
            status=403,
            title="Link not valid",
        )
    try:
        ids = parse_entry(study, request.GET)
    except BadEntry as exc:
        return render(
            request,
            "crowd/bad_link.html",
            {"study": study, "parameter": exc.parameter, "message": str(exc), "missing": exc.missing},
            status=400,
        )
    if ids.preview:
        return render(request, "crowd/preview.html", {"study": study, "task": study.round.task})
    signed_in = request.user if request.user.is_authenticated else None
    try:
        entry = services.enter(study=study, ids=ids, signed_in=signed_in)
    except services.StudyRefused as exc:
        return _refused(request, study, str(exc), status=409)
    if signed_in is None or signed_in.pk != entry.user.pk:
        if signed_in is not None:
            logout(request)
        login(request, entry.user, backend="django.contrib.auth.backends.ModelBackend")  # rotates the session
    # else: their own session already (a second tab): keep it, so the first tab's CSRF token stays valid
    if study.platform == Platform.MTURK:
        request.session[SESSION_FLAG] = True  # the create and validate pages are framed by MTurk too
    participation = entry.participation
    if participation.status == Participation.Status.COMPLETED:
        return redirect("crowd:complete", public_id=study.public_id)
    if participation.consented_at is None:
        return redirect("crowd:consent", public_id=study.public_id)
    return redirect(work_url(participation))


@require_http_methods(["GET", "POST"])
@crowd_page
def consent(request, public_id):
    """The study's consent text, once per participation: "I agree" (POST) records the time and sends the
    participant to the work; after that this page only sends them on."""
    study = _study_or_404(public_id)
    participation = _participation_or_404(request, study)
    if participation.status == Participation.Status.COMPLETED:
        return redirect("crowd:complete", public_id=study.public_id)
    if participation.consented_at is not None and participation.status == Participation.Status.ACTIVE:
        return redirect(work_url(participation))
    if request.method == "POST":
        try:
            services.record_consent(participation=participation)
        except services.StudyRefused as exc:
            return _refused(request, study, str(exc), status=409)
        return redirect(work_url(participation))
    if participation.status != Participation.Status.ACTIVE:
        return _refused(request, study, "This participation has ended.", status=409)
    return render(request, "crowd/consent.html", {"study": study, "task": study.round.task})


def completion_target(participation: Participation) -> dict:
    """Where a completed participant goes: ``{"url": ..., "mturk_action": ..., "assignment_id": ...}``.

    Prolific: the study's completion URL, else Prolific's completion page with the code. MTurk: a form
    posted by the participant's browser to ``<turkSubmitTo>/mturk/externalSubmit`` (this server never
    calls out). Generic: the completion URL, if any (the page shows the code either way).
    """
    study = participation.study
    if study.platform == Platform.MTURK and participation.turk_submit_to:
        return {
            "url": "",
            "mturk_action": f"{participation.turk_submit_to}/mturk/externalSubmit",
            "assignment_id": participation.assignment_id,
        }
    if study.completion_url:
        return {"url": study.completion_url}
    if study.platform == Platform.PROLIFIC:
        return {"url": PROLIFIC_COMPLETE.format(code=study.completion_code)}
    return {"url": ""}


@require_http_methods(["GET", "POST"])
@crowd_page
def complete(request, public_id):
    """``/study/<uuid>/complete/``: complete the participation (once) and show the completion code, then
    send the participant back to the platform. Refused (409, with the progress) before the work is done."""
    study = _study_or_404(public_id)
    participation = _participation_or_404(request, study)
    try:
        participation = services.complete(participation=participation)
    except services.StudyRefused as exc:
        context = {"study": study, "message": str(exc), "participation": participation}
        if exc.code == "not_done":
            context["work_url"] = work_url(participation)
        return render(request, "crowd/not_done.html", context, status=409)
    ended_early = participation.ended_early
    return render(
        request,
        "crowd/complete.html",
        {
            "study": study,
            "participation": participation,
            "platform_name": services.PLATFORM_NAMES.get(study.platform, "the platform"),
            "round_end": services.round_end_phrase(study) if ended_early else "",
            "progress": selectors.progress_of(participation) if ended_early else None,
            **completion_target(participation),
        },
    )


@require_GET
@never_cache
def progress(request):
    """``GET /study/progress/``: the study banner's entries alone (``crowd/_banner_items.html``, the context
    of ``context_processors.study_progress``), for ``crowd/banner.js`` to put in place after the page sent
    work without a reload. Empty (200, no content) for anyone who is in no study."""
    html = render_to_string("crowd/_banner_items.html", request=request)
    return HttpResponse(html if html.strip() else "", content_type="text/html; charset=utf-8")


@require_http_methods(["GET", "POST"])
@crowd_page
def return_study(request, public_id):
    """ "Return this study": a confirmation page (GET); POST gives the place back (once) and logs out.

    A second POST (already returned, the browser now signed out) answers "You have already returned this
    study."; a completed participant is told there is nothing to return (409)."""
    study = _study_or_404(public_id)
    if not request.user.is_authenticated and str(study.public_id) in request.session.get(RETURNED_KEY, []):
        return _already_returned(request, study)  # a second "Yes, return this study" after the logout
    participation = _participation_or_404(request, study)
    if participation.status == Participation.Status.COMPLETED:
        return _refused(
            request,
            study,
            "You have completed this study; there is nothing to return.",
            status=409,
            title="Nothing to return",
        )
    if participation.status == Participation.Status.RETURNED:
        return _already_returned(request, study)
    if request.method == "POST":
        if not services.return_study(participation=participation):
            participation.refresh_from_db()
            if participation.status == Participation.Status.RETURNED:
                return _already_returned(request, study)
            return _refused(request, study, "This participation has already ended.", status=409)
        logout(request)
        request.session[RETURNED_KEY] = [str(study.public_id)]  # the new, anonymous session
        return render(request, "crowd/returned.html", {"study": study})
    if participation.status != Participation.Status.ACTIVE:
        return _refused(request, study, "This participation has already ended.", status=409)
    return render(request, "crowd/return.html", {"study": study})


def _already_returned(request, study: Study):
    return render(request, "crowd/returned.html", {"study": study, "again": True})
