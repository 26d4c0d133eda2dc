"""Validation pages: the validator's queue, the owner review page, a person's own statistics."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from annotation.red_team import presenting as red_team_presenting
from annotation.selectors import predictions_of
from core.text_rules import ascii_id
from tasks import qualification
from tasks import selectors as task_selectors
from tasks.kinds import conversational
from tasks.models import Task

from . import selectors, services, verdict_undo
from .forms import VerdictForm
from .models import Validation
from .serializers import validator_fields

REVIEW_PAGE_SIZE = 50


def _owned_task_or_404(request, slug: str) -> Task:
    """Non-owners get 404, not 403: the review page's existence leaks nothing."""
    task = task_selectors.task_or_404(slug)
    if not task.is_owner(request.user):
        raise Http404("No such page.")
    return task


def _round_or_404(task: Task, number):
    round_ = selectors.round_of(task, number)
    if round_ is None:
        raise Http404("No such round.")
    return round_


def authors_label(label: str) -> str:
    """The label of an input field as a validator (or owner) reads it: what the author wrote, named as the
    author's. The task config's labels speak to the author on the create page ("Your sentence",
    "Statement"); here they read "The author's sentence", "The author's statement". A leading "your" goes,
    the first letter is lowered unless the first word is an acronym ("NLI hypothesis"); a label already
    about the author is kept, and an empty one reads "The author's text"."""
    label = " ".join((label or "").split())
    if label.lower().startswith("the author's ") or label.lower().startswith("the author’s "):
        return label
    if label.lower().startswith("your "):
        label = label[len("your ") :]
    if not label:
        return "The author's text"
    first = label.split(" ", 1)[0]
    if not (len(first) > 1 and first.isupper()):
        label = label[0].lower() + label[1:]
    return f"The author's {label}"


def _shown(example, task: Task, *, as_owner: bool = False) -> dict:
    """What a validator sees of an example: context, inputs (labelled as the author's, ``authors_label``),
    the model predictions, and of the author's judgement only what ``serializers.validator_fields`` gives,
    as the API serves it: for a red-teaming conversation (unanchored) the rubric's questions and none of
    the author's answers, categories or explanation; otherwise the intended target and the explanation."""
    cfg = task.cfg
    fields = validator_fields(example)
    context = example.context.data if example.context_id else {}
    if conversational(cfg) and red_team_presenting.mode_of(example):
        # Never the author's judgement or categories: a multiple-choice item shows its marked answer
        # (the target, anchored), a conversation only the rubric's questions (unanchored).
        shown = red_team_presenting.shown_example(example, cfg, with_judgement=False)
        if fields["unanchored"]:
            shown["rubric"] = red_team_presenting.rubric_questions(cfg)
        return {"example": example, "explanation": fields["explanation"], **shown}
    if as_owner and services.is_given_target_example(example):
        # The owners' review page: they settle the example, so they see the author's label and the model.
        fields = {**fields, "target": example.target, "explanation": example.explanation, "model": True,
                  "unanchored": False}  # fmt: skip
    target = fields["target"]
    return {
        "example": example,
        "context_fields": [
            (spec.get("label", spec["name"]), context.get(spec["name"], "")) for spec in cfg.context_fields
        ],
        "inputs": [
            (authors_label(spec.get("label", spec["name"])), example.inputs.get(spec["name"], ""))
            for spec in cfg.input_fields
        ],
        "target_name": cfg.target_field["name"],
        "target": target.get("answer", target) if isinstance(target, dict) else target,
        "explanation": fields["explanation"],
        "predictions": predictions_of(example) if fields["model"] else [],
        # Uncertainty mode: the validator gives the label themselves (validator_fields), never seeing the
        # author's; the form asks for it.
        "given_target": fields["unanchored"],
    }


def _already_recorded(example, user, sent: str) -> str:
    """What a second verdict on one example is told: the same one again (a double click, another tab)
    was recorded once; a different one was not recorded, and the recorded one is named (not where
    validation is unanchored: the rubric's verdict would reveal the author's, ``validator_fields``)."""
    recorded = selectors.validations_of(example).filter(validator=user, is_owner_verdict=False).first()
    if validator_fields(example)["unanchored"]:
        return f"Your answers on example {example.pk} were already recorded; a second set is not."
    if recorded is None or recorded.verdict == sent:
        return f"Your verdict on example {example.pk} was already recorded."
    return (
        f"You already gave example {example.pk} the verdict “{recorded.get_verdict_display().lower()}”; "
        f"your second verdict “{Validation.Verdict(sent).label.lower()}” was not recorded."
    )


def _rubric_answers(data) -> dict | None:
    """The rubric answers a verdict form sent (``rubric-<question>`` fields), or None when it sent none
    (an owner's plain verdict)."""
    return red_team_presenting.rubric_answers_from(data) or None


def _submit(request, task: Task, form: VerdictForm, *, owner_mode: bool) -> None:
    """Call the service with a bound form and report the outcome as a flash message."""
    if not form.is_valid():
        messages.error(request, form.error_text())
        return
    # One lookup for unknown ids and examples the user may not see: both are the same 404. A validator
    # the task's rules refuse (a study that ended, the daily cap...) is sent back to the validate page,
    # which says why, whatever the id: their claim may have been released with the refusal.
    example = selectors.verdict_examples(task, request.user).filter(pk=form.cleaned_data["example"]).first()
    if example is None:
        try:
            qualification.check_can_contribute(task, request.user, qualification.VALIDATE, lock=False)
        except qualification.NotQualified:
            return
        raise Http404("No such example.")
    try:
        outcome = services.submit_validation(
            example=example,
            validator=request.user,
            verdict=form.cleaned_data["verdict"],
            corrected_label=form.cleaned_data.get("corrected_label", ""),
            reason=form.cleaned_data["reason"],
            owner_mode=owner_mode,
            rubric_answers=_rubric_answers(request.POST),
            given_target=form.given_target(),
        )
    except services.VerdictError as exc:
        if exc.code == "already_validated":
            messages.info(request, _already_recorded(example, request.user, form.cleaned_data["verdict"]))
        elif exc.code == "settled":
            messages.info(
                request, f"Example {example.pk} was settled before your verdict; nothing was recorded."
            )
        elif exc.qualification:
            pass  # the task's rules: the page this redirects to says why (or sends to the quiz)
        else:
            messages.error(request, form.service_error_text(exc))
        return
    settled = f" Example {example.pk} is now settled." if outcome.settled else ""
    messages.success(request, f"Verdict recorded.{settled}")
    if not owner_mode and not outcome.settled:
        # The verdict stored: a rubric's answers decide it, whatever button value was posted. Unanchored,
        # it is not named (it would say whether the answers agreed with the author's: validator_fields).
        hidden = validator_fields(example)["unanchored"]
        _offer_undo(request, task, example.pk, None if hidden else outcome.validation.verdict)


UNDO_SESSION_KEY = "validation_undo"


def _offer_undo(request, task: Task, example_id: int, verdict: str | None) -> None:
    """Remember the verdict just recorded, so the next page offers to undo it within the window; None:
    rubric answers, whose verdict is not named to the validator."""
    until = timezone.now().timestamp() + verdict_undo.undo_seconds()
    request.session[UNDO_SESSION_KEY] = {
        "task": task.pk,
        "example": example_id,
        "verdict": verdict,
        "until": until,
    }


def _undo_offer(request, task: Task) -> dict | None:
    """The undo offer for ``task`` still within its window, with ``seconds_left``; else None."""
    offer = request.session.get(UNDO_SESSION_KEY)
    if not offer or offer.get("task") != task.pk:
        return None
    left = int(offer["until"] - timezone.now().timestamp())
    if left <= 0:
        return None
    return {
        **offer,
        "seconds_left": left,
        "verdict_label": Validation.Verdict(offer["verdict"]).label.lower() if offer["verdict"] else None,
    }


@login_required
def validate(request, slug: str):
    """Serve the next example of the round (``?round=N``, default current) and take a verdict on it.

    POST records the verdict, then redirects (POST/redirect/GET) to the next example.

    The task's qualification rules (``tasks.qualification``): a validator who has to pass the quiz is
    sent to it (``?next=`` back here); any other refusal (blocked, not on the allow list, held, daily
    cap) is shown on the task page instead of an example.

    The page shows the task's content warning and instructions, the validator's progress in the round,
    and the model's answer only on request unless the task config sets ``validation_shows_model_answer``.
    An empty queue that only others' claims keep empty says when the first claim runs out.
    """
    task = task_selectors.task_or_404(slug)
    round_ = _round_or_404(task, request.GET.get("round") or request.POST.get("round"))
    here = f"{reverse('validation:validate', args=[task.slug])}?round={round_.number}"
    if request.method == "POST":
        _submit(request, task, VerdictForm(task.cfg, request.POST), owner_mode=False)
        return redirect(here)
    try:
        example = services.next_example(round_=round_, validator=request.user)
    except services.VerdictError as exc:
        if exc.qualification and exc.url:
            return redirect(qualification.with_next(exc.url, here))
        messages.error(request, VerdictForm.service_error_text(exc))
        return redirect("tasks:detail", slug=task.slug)
    context = {
        "task": task,
        "round": round_,
        "rounds": task_selectors.rounds_of(task),
        "is_owner": task.is_owner(request.user),
    }
    if example is None:
        context["undo"] = _undo_offer(request, task)
        context["summary"] = selectors.queue_summary(round_, request.user)
        context["wait"] = selectors.claim_wait(round_, request.user, context["summary"])
        context["other_rounds"] = [r for r in context["rounds"] if r.pk != round_.pk]
        return render(request, "validation/empty.html", context)
    context.update(_shown(example, task))
    context["undo"] = _undo_offer(request, task)
    context["form"] = VerdictForm(task.cfg, initial={"example": example.pk})
    context["hidden"] = [("round", round_.number)]
    context["claim_minutes"] = max(1, services.claim_seconds() // 60)
    context["cfg"] = task.cfg
    context["progress"] = selectors.progress_of_validator(round_, request.user)
    context["hide_model_answer"] = not task.cfg.validation_shows_model_answer
    return render(request, "validation/validate.html", context)


@login_required
@require_POST
def undo(request, slug: str):
    """Undo the requester's verdict on the example posted as ``undo`` (``validation.verdict_undo``): within the
    window and while the example is unsettled, the vote goes and the example is served to them again.
    Another task's or an unknown example is a 404, like the verdict form's."""
    task = task_selectors.task_or_404(slug)
    round_ = _round_or_404(task, request.POST.get("round"))
    # Not "example": the verdict form on the same page sends that one.
    example_id = ascii_id(request.POST.get("undo", ""))
    if example_id is None:
        raise Http404("No such example.")
    example = get_object_or_404(selectors.verdict_examples(task, request.user), pk=example_id)
    request.session.pop(UNDO_SESSION_KEY, None)
    try:
        verdict_undo.undo_verdict(example=example, validator=request.user)
    except services.VerdictError as exc:
        messages.error(request, VerdictForm.service_error_text(exc))
    else:
        messages.success(request, f"Your verdict on example {example.pk} was undone. Give it again.")
    return redirect(f"{reverse('validation:validate', args=[task.slug])}?round={round_.number}")


def _review_params(source) -> dict:
    show = source.get("show", "flags")
    state = source.get("state", "pending")
    return {
        "show": show if show in selectors.REVIEW_FILTERS else "flags",
        "state": state if state in selectors.REVIEW_STATES else "pending",
        "round": source.get("round", ""),
    }


@login_required
def review(request, slug: str):
    """Task owners' review list: filter by flags or disagreement, settle with owner-mode verdicts."""
    task = _owned_task_or_404(request, slug)
    params = _review_params(request.GET)
    round_ = _round_or_404(task, params["round"]) if params["round"] else None
    examples = selectors.review_examples(task, show=params["show"], state=params["state"], round_=round_)
    page = Paginator(examples, REVIEW_PAGE_SIZE).get_page(request.GET.get("page"))
    rows = [
        {**_shown(e, task, as_owner=True), "form": VerdictForm(task.cfg, initial={"example": e.pk})}
        for e in page
    ]
    return render(
        request,
        "validation/review.html",
        {
            "task": task,
            "page": page,
            "rows": rows,
            "params": params,
            "query": urlencode(params),
            "hidden_params": list(params.items()),
            "rounds": task_selectors.rounds_of(task),
            "filters": selectors.REVIEW_FILTERS,
            "states": selectors.REVIEW_STATES,
        },
    )


@login_required
@require_POST
def review_verdict(request, slug: str):
    """An owner-mode verdict from the review page; settles the example at once."""
    task = _owned_task_or_404(request, slug)
    _submit(request, task, VerdictForm(task.cfg, request.POST), owner_mode=True)
    return redirect(
        f"{reverse('validation:review', args=[task.slug])}?{urlencode(_review_params(request.POST))}"
    )


@login_required
def my_stats(request, slug: str):
    """The requesting person's own statistics in the task, one row per round."""
    task = task_selectors.task_or_404(slug)
    return render(
        request,
        "validation/me.html",
        {"task": task, "rows": selectors.annotator_round_stats(task, user=request.user)},
    )
