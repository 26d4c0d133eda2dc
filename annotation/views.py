"""The annotator's pages: write an example (the verdict shown on the page), see the outcome, explain,
retract (after a confirm step) or flag it."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render, resolve_url
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_POST

from core.text_rules import ascii_id
from tasks import qualification
from tasks import selectors as task_selectors
from tasks.kinds import conversational, labelled
from tasks.models import Task

from . import confidence as confidence_service
from . import selectors, services, session_examples, submissions, verdict
from .ask_user import awaits_user_verdict, record_user_verdict
from .assistant import services as assistant
from .forms import SPAN_START_FIELD, ExampleForm, ExplanationForm, FlagForm, signed_start
from .goal import goal_met_q, goal_words
from .red_team import presenting as red_team_presenting
from .throttling import ConfidenceThrottle, SuggestionThrottle


def _unsaved_rows(cfg, data, written_for) -> list[tuple[str, str]]:
    """The refused form's text as ``(label, text)`` rows, shown apart from the form (never in it) so that
    it can be copied: the context it was written for (when it still exists), the inputs and the target
    as sent. Empty values are left out."""
    rows = []
    if written_for is not None:
        for spec in cfg.context_fields:
            value = written_for.data.get(spec["name"], "")
            if value:
                rows.append((f"{spec.get('label', spec['name'])} it was written for", str(value)))
    for spec in [*cfg.input_fields, cfg.target_field]:
        value = data.get(spec["name"], "")
        if isinstance(value, str) and value.strip():
            rows.append((spec.get("label", spec["name"]), value.replace("\x00", "")))
    return rows


NO_SESSION_EXAMPLES = "No examples written in this session yet."


def _tally(request, task: Task) -> dict | None:
    """``{"fooled": n, "written": m, "text": "n of m fooled the model in this session", "empty_text": the
    text once the tally is reset (the page's script shows it)}``: of the
    examples written through this browser session's pages (``session_examples``), those still in
    the current round and not retracted; None when the task has no current round."""
    if task.current_round_id is None:
        return None
    fooled, written = selectors.session_tally(
        request.user,
        task.current_round,
        session_examples.session_example_ids(request, task),
        goal_met_q(task.cfg),
    )
    # "2 of 3 fooled the model", or in uncertainty mode "2 of 3 made the model unsure".
    words = goal_words(task.cfg)
    text = f"{fooled} of {written} {words} in this session." if written else NO_SESSION_EXAMPLES
    return {"fooled": fooled, "written": written, "text": text, "empty_text": NO_SESSION_EXAMPLES}


def _is_fetch(request) -> bool:
    """True for the create page's script (``create.js``), which asks for an HTML fragment."""
    return request.headers.get("X-Requested-With") == "fetch"


def _variation_initial(task: Task, variation, *, same_context: bool) -> dict:
    """The create form's initial values from the author's own example: its inputs and its label, or its
    span answer. ``same_context``: the form is served with the example's own context, so a span answer
    keeps its offset (the occurrence the author selected, not the first one in the passage); on another
    context the answer text alone is kept, for the server to find."""
    initial = dict(variation.inputs)
    if isinstance(variation.target, str):
        initial[task.cfg.target_field["name"]] = variation.target
    elif isinstance(variation.target, dict):
        initial[task.cfg.target_field["name"]] = variation.target.get("answer", "")
        start = variation.target.get("answer_start")
        if same_context and isinstance(start, int) and not isinstance(start, bool):
            initial[SPAN_START_FIELD] = start
    return initial


@login_required
def create(request, slug: str):
    """Write an example: the server runs the target model(s), then shows the verdict (a POST:
    ``_create_post``).

    A task with context fields serves a context (``tasks.selectors.next_context``, least used first,
    optional ``?tag=``; ``?skip=<context id>`` serves another one, "Skip this context") and carries its id
    twice: in the hidden ``context`` field and signed with the form token in ``started``
    (``forms.signed_start``). ``?variation=<example id>`` prefills the form with the requester's own
    example of this task (its text, label or span answer and, while it is in the current round, its
    context, with the answer's offset); someone else's is a 404. The form asks the browser not to restore
    its values on Back (``autocomplete="off"``).

    The task's qualification rules (``tasks.qualification.check_can_contribute``): a worker who has to see
    the tutorial or pass the quiz is sent there (``?next=`` back here); a blocked, unlisted, held, capped
    or competition-limited one sees the message instead of the form.

    The session tally ("2 of 3 fooled the model in this session") counts the examples written through
    this page and the red-teaming pages in this browser session (``session_examples``) that are still in
    the current round and not retracted (``reset_tally`` empties it).
    """
    task = task_selectors.task_or_404(slug)
    if conversational(task.cfg):  # its examples are conversations and items (annotation/red_team/)
        return redirect("annotation:red_team", slug=task.slug)
    if request.method == "POST":
        return _create_post(request, task)
    refusal = None
    if task.open_round is not None and request.user.can_contribute:
        try:
            qualification.check_can_contribute(task, request.user, qualification.WRITE, lock=False)
        except qualification.NotQualified as exc:
            if exc.url:
                return redirect(qualification.with_next(exc.url, request.get_full_path()))
            refusal = exc
    context, initial = None, {}
    if request.GET.get("variation"):
        variation = selectors.own_example_of_task(request.user, task, request.GET["variation"])
        if variation is None:
            raise Http404("No example of yours with that id in this task.")
        needs_context = bool(task.cfg.context_fields) and task.open_round is not None
        if needs_context and variation.context_id and variation.context.round_id == task.current_round_id:
            context = variation.context
        initial = _variation_initial(task, variation, same_context=context is not None)
    skipped = ascii_id(request.GET.get("skip"))
    return _create_page(request, task, initial=initial, context=context, skipped=skipped, refusal=refusal)


def _create_post(request, task: Task) -> HttpResponse:
    """A sent form, stored on the context it was served with or refused by the rules of
    ``annotation/submissions.py`` (docs/domain.md, "Context serving"), never saved on another context.

    Stored: the outcome page, or for the page's script (header ``X-Requested-With: fetch``,
    ``static/annotation/create.js``) the verdict fragment (``_create_result.html``, 200) with a fresh form
    token, so the text kept in the box is sent as a new example next time. Refused: the form shown again
    with its text (read-only when the round closed; with a fresh token when its token was spent on
    another text; with the context it was written for when the page showed another), or for the script
    the messages (``_create_errors.html``, 422). A form whose context can no longer take examples gets a
    new context and an empty form, its text shown apart (``unsaved``), to copy. The script keeps the
    text when the session has run out (it checks the answer against ``login_url`` and reads the renewed
    CSRF cookie ``csrf_cookie_name``) and counts characters against each box's ``data-max-length``."""
    form = ExampleForm(task.cfg, request.POST)
    fetch = _is_fetch(request)
    try:
        example = submissions.submit(form.submission(task, request.user))
    except submissions.Refused as refused:
        form.add_service_errors(refused)
        if refused.code == "context_gone":
            # Never on another context: the text is shown apart, to copy, and a new context comes with
            # an empty form (the script sends it the plain way, which renders that page).
            if fetch:
                return _create_errors(request, task, form, reload=True)
            unsaved = _unsaved_rows(task.cfg, request.POST, refused.written_for)
            return _create_page(
                request, task, context_gone=str(refused.errors[services.NON_FIELD][0]), unsaved=unsaved
            )
        form.context_id = refused.context.pk if refused.context else None  # signed into a renewed stamp
        if refused.code == "token_used":
            form.renew_token()
        if refused.code == "not_collecting":
            for name in form.input_names:
                form.fields[name].widget.attrs["readonly"] = True
        if fetch:
            return _create_errors(request, task, form, reload=refused.code == "context_mismatch")
        return _create_page(request, task, form=form, context=refused.context)
    session_examples.remember_example(request, task, example.pk)
    if fetch:
        return _create_result(request, task, example)
    return redirect("annotation:outcome", pk=example.pk)


def _create_page(
    request,
    task: Task,
    *,
    form: ExampleForm | None = None,
    context=None,
    initial: dict | None = None,
    skipped: int | None = None,
    refusal=None,
    context_gone: str = "",
    unsaved: list[tuple[str, str]] | None = None,
) -> HttpResponse:
    """The create page: ``form`` shown again with the ``context`` it was written for, or a new form
    (``initial`` values) on ``context`` or, for a task with contexts, on the next one served."""
    cfg = task.cfg
    collecting = task.open_round is not None
    needs_context = bool(cfg.context_fields) and collecting
    # A form shown again keeps the context it was written for (none, for a task whose context is
    # optional); a new form gets the next one.
    if needs_context and context is None and form is None:
        context = task_selectors.next_context(
            round_=task.current_round, tag=request.GET.get("tag") or None, exclude=skipped
        )
    if form is None:
        form = ExampleForm(cfg, initial=initial or {}, context_id=context.pk if context else None)
    return render(
        request,
        "annotation/create.html",
        {
            "task": task,
            "form": form,
            "collecting": collecting,
            "blocked": not request.user.can_contribute,
            "refusal": refusal,
            "needs_context": needs_context,
            "context_missing": needs_context and context is None and cfg.context_required,
            "served_context": context,
            "context_gone": context_gone,
            "unsaved": unsaved or [],
            "skip_found_none": skipped is not None and context is not None and context.pk == skipped,
            "tag": request.GET.get("tag") or "",
            "context_fields": [
                (spec.get("label", spec["name"]), context.data.get(spec["name"], ""))
                for spec in cfg.context_fields
            ]
            if context
            else [],
            "tally": _tally(request, task) if collecting else None,
            "label_descriptions": [
                (label, cfg.label_descriptions[label])
                for label in cfg.labels
                if label in cfg.label_descriptions
            ],
            "tutorial_items": selectors.tutorial_items_of(task),
            "login_url": resolve_url(settings.LOGIN_URL),
            "csrf_cookie_name": settings.CSRF_COOKIE_NAME,
            # The annotation-assistant study: the writer's arm, assigned the first time they come to
            # write (annotation.assistant.arms); None without a study or for who cannot write here.
            "assistant_arm": (
                assistant.arm_for(task, request.user)
                if collecting and refusal is None and request.user.can_contribute
                else None
            ),
        },
    )


def _create_result(request, task: Task, example) -> HttpResponse:
    """The fetch answer to a stored example: the verdict fragment with the next form token."""
    token = uuid.uuid4()
    response = render(
        request,
        "annotation/_create_result.html",
        {
            **_verdict_context(request, example),
            "next_token": token,
            "next_started": signed_start(token, example.context_id),
            "tally": _tally(request, task),
        },
    )
    patch_vary_headers(response, ["X-Requested-With"])
    return response


def _create_errors(request, task: Task, form, *, reload: bool) -> HttpResponse:
    """The fetch answer to a refused example (status 422): every message, and the hidden values to send
    next (the form token, renewed when the old one was spent; the current round). ``reload``: the form
    cannot be sent again from the page as it is (its context is gone, or it is not the one the page
    shows), so ``data-reload`` asks the script to send it the plain way, whose page shows the text with
    its own context, or apart from a new one."""
    errors = [str(message) for message in form.non_field_errors()]
    for field in form:
        for message in map(str, field.errors):
            # Shown apart from its box, a message says which box, unless it already names it ("Statement
            # is too long: ...", "Choose the label you intend."), where a prefix would say it twice.
            named = field.is_hidden or str(field.label).casefold() in message.casefold()
            errors.append(message if named else f"{field.label}: {message}")
    response = render(
        request,
        "annotation/_create_errors.html",
        {
            "errors": errors,
            "form": form,
            "task": task,
            "reload": reload,
        },
        status=422,
    )
    patch_vary_headers(response, ["X-Requested-With"])
    return response


def _helper_request(request, task: Task, throttle, doing: str):
    """What the create page's helpers (live confidence, the assistant) share before their work: the
    person's rate (``throttle``; 429 with ``Retry-After``, "<doing> too often"), an open round (409), and
    the form's ``context`` when the task has contexts (409 when it is not the current round's).

    Returns:
        ``(context or None, None)`` to go on, or ``(None, the JSON refusal)``.
    """
    if not throttle.allow_request(request, None):
        wait = throttle.wait_seconds()
        response = JsonResponse({"errors": [f"{doing} too often; try again in {wait} s."]}, status=429)
        response["Retry-After"] = str(wait)
        return None, response
    if task.open_round is None:
        return None, JsonResponse({"errors": [submissions.NOT_COLLECTING]}, status=409)
    context = None
    if task.cfg.context_fields and request.POST.get("context"):
        context = task_selectors.context_of_round(task.current_round, request.POST["context"])
        if context is None:
            message = "This context is no longer part of the current round."
            return None, JsonResponse({"errors": [message]}, status=409)
    return context, None


@login_required
@require_POST
def confidence(request, slug: str):
    """Uncertainty mode's live goal for the create page's script: the round's target models on the draft
    in the form (its input fields and ``context``), measured by the task's goal, as JSON
    (``confidence.as_json``); nothing is stored. ``{"errors": [...]}`` with 400 (bad text, no such task
    mode), 403 (the writer may not write), 409 (no open round) or 429 (over ``DYNABENCH_CONFIDENCE_RATE``,
    with ``Retry-After``)."""
    task = task_selectors.task_or_404(slug)
    context, refusal = _helper_request(request, task, ConfidenceThrottle(), "Checking")
    if refusal is not None:
        return refusal
    inputs = {spec["name"]: request.POST.get(spec["name"], "") for spec in task.cfg.input_fields}
    try:
        probe = confidence_service.probe_confidence(
            task=task, annotator=request.user, inputs=inputs, context=context
        )
    except services.ExampleError as exc:
        status = 403 if isinstance(exc, services.NotQualifiedToWrite) else 400
        return JsonResponse({"errors": [m for ms in exc.errors.values() for m in ms]}, status=status)
    return JsonResponse(confidence_service.as_json(task.cfg, probe))


@login_required
@require_POST
def suggest(request, slug: str):
    """The annotation assistant's candidate example for the create page's script, as JSON
    ``{"id", "text", "arm", "seconds"}`` (``assistant.suggest``: on the form's ``context``, for its
    chosen ``label`` if any); ``{"errors": [...]}`` with 400 (bad label or context; the writer's arm has
    no assistant), 403 (the writer may not write), 409 (no open round), 429 (over
    ``DYNABENCH_SUGGESTION_RATE``, with ``Retry-After``) or 503 (the assistant is not available or did
    not answer)."""
    task = task_selectors.task_or_404(slug)
    context, refusal = _helper_request(request, task, SuggestionThrottle(), "Asking")
    if refusal is not None:
        return refusal
    label = request.POST.get(task.cfg.target_field["name"], "") if labelled(task.cfg) else ""
    try:
        suggestion = assistant.suggest(task=task, worker=request.user, context=context, label=label)
    except services.ExampleError as exc:
        return JsonResponse({"errors": [m for ms in exc.errors.values() for m in ms]}, status=403)
    except assistant.AssistantError as exc:
        status = {"unavailable": 503, "failed": 503, "busy": 429}.get(exc.code, 400)
        return JsonResponse({"errors": [exc.message]}, status=status)
    return JsonResponse(
        {"id": suggestion.pk, "text": suggestion.text, "arm": suggestion.arm, "seconds": suggestion.seconds}
    )


@login_required
@require_POST
def reset_tally(request, slug: str):
    """Empty the requester's session tally on ``slug`` (forget the examples kept for it), then back to
    the create page."""
    task = task_selectors.task_or_404(slug)
    session_examples.forget_examples(request, task)
    messages.success(request, "Session tally reset.")
    return redirect("annotation:create", slug=task.slug)


def _visible_example(request, pk: int):
    return get_object_or_404(selectors.examples_visible_to(request.user), pk=pk)


def history_of(example) -> list[tuple]:
    """The example's history as ``(time, what)`` pairs, oldest first (docs/domain.md, "Example history"):
    written, every verdict (the owner verdict marked, no validator named), flagged and retracted by its
    author, settled. A settlement follows the verdict that made it, which has the same time."""
    events = [(example.created_at, "Written")]
    for v in selectors.validations_in_order().filter(example=example):
        what = f"{'Owner verdict' if v.is_owner_verdict else 'Verdict'}: {v.get_verdict_display().lower()}"
        if v.corrected_label:
            what += f" (corrected label: {v.corrected_label})"
        events.append((v.created_at, what))
    if example.flagged_at:
        events.append((example.flagged_at, "Flagged for the task owners by its author"))
    if example.retracted_at:
        events.append((example.retracted_at, "Retracted by its author"))
    if example.settled_at:
        events.append((example.settled_at, f"Settled: {example.get_status_display().lower()}"))
    return sorted(events, key=lambda event: event[0])  # stable: a settlement stays after its verdict


def _verdict_context(request, example) -> dict:
    """What ``annotation/_verdict.html`` reads of ``example`` (the outcome page and the create page's
    fragment): its text and label, each model's answer as ``verdict.PredictionRow``s (probability of the
    intended label, close call), the ask-user question, and where it stands with the validators.

    Worded for the reader: the author reads "The label you intend"; anyone else (a task owner) "The
    label the author intends" (``verdict.authors_wording``)."""
    task = example.round.task
    cfg = task.cfg
    is_author = example.annotator_id == request.user.pk
    worded = (lambda label: label) if is_author else verdict.authors_wording
    predictions = list(selectors.predictions_of(example))  # one read for both kinds of row
    return {
        "example": example,
        "task": task,
        "inputs": [
            (worded(spec.get("label", spec["name"])), example.inputs.get(spec["name"], ""))
            for spec in cfg.input_fields
        ],
        "target_label": worded(cfg.target_field.get("label", "Target")),
        "prediction_rows": verdict.prediction_rows(example, predictions, cfg),
        "close_call_margin": cfg.close_call_margin,
        "is_author": is_author,
        "asks_user": is_author and awaits_user_verdict(example),
        "ask_user_rule": cfg.model_wrong_rule == "ask_user",
        "validation_state": verdict.validation_state(example, cfg, is_author=is_author),
        "goal": cfg.uncertainty,
        "unsure_rows": verdict.unsure_rows(predictions, cfg),
    }


def _render_outcome(request, example, *, explanation_form=None, flag_form=None):
    """The outcome page; a bound form passed in is shown with its errors and the text it was sent with.

    ``context_fields`` lists (label, text) of the context the example was written on (NLI premise, QA
    passage, sentiment prompt), skipping fields that context leaves empty; empty without a context.
    """
    task = example.round.task
    context = example.context.data if example.context_id else {}
    is_author = example.annotator_id == request.user.pk
    red_team = (
        red_team_presenting.shown_example(example, task.cfg, with_judgement=True)
        if conversational(task.cfg) and red_team_presenting.mode_of(example)
        else None
    )
    return render(
        request,
        "annotation/outcome.html",
        {
            **_verdict_context(request, example),
            "red_team": red_team,
            "context_fields": [
                (spec.get("label", spec["name"]), context[spec["name"]])
                for spec in task.cfg.context_fields
                if context.get(spec["name"])
            ],
            "explanation_form": explanation_form
            or ExplanationForm(initial={"explanation": example.explanation}),
            "flag_form": flag_form or FlagForm(),
            "history": history_of(example),
            "collecting": task.open_round is not None,
            "tally": _tally(request, task)
            if is_author and example.round_id == task.current_round_id
            else None,
        },
    )


@login_required
def outcome(request, pk: int):
    """What the model said about an example. Visible to its author and the task's owners (404 otherwise)."""
    return _render_outcome(request, _visible_example(request, pk))


def _own_example(request, pk: int):
    """The requester's own example; someone else's is a 404 here, even for owners of the task."""
    return get_object_or_404(selectors.own_examples(request.user), pk=pk)


def _show_errors(request, form, exc: services.ExampleError) -> None:
    """Field errors go on the form (shown next to the text kept); the others above the page."""
    for message in exc.errors.get(services.NON_FIELD, []):
        messages.error(request, message)
    form.add_service_errors(
        services.ExampleError({k: v for k, v in exc.errors.items() if k != services.NON_FIELD})
    )


@login_required
@require_POST
def explain(request, pk: int):
    """Save the author's explanation; on an error, show the page again with the text kept."""
    example = _own_example(request, pk)
    form = ExplanationForm(request.POST)
    if form.is_valid():
        try:
            services.add_explanation(
                example=example, user=request.user, explanation=form.cleaned_data["explanation"]
            )
        except services.ExampleError as exc:
            _show_errors(request, form, exc)
        else:
            messages.success(request, "Explanation saved.")
            return redirect("annotation:outcome", pk=example.pk)
    example.refresh_from_db()
    return _render_outcome(request, example, explanation_form=form)


@login_required
def retract_confirm(request, pk: int):
    """The confirm step of a retraction (no script needed): "Retract this example?" with a Retract button
    that POSTs to ``retract`` and a Cancel link back to the outcome page. An example already retracted
    goes back to its page."""
    example = _own_example(request, pk)
    if example.is_retracted:
        messages.info(request, "This example is already retracted.")
        return redirect("annotation:outcome", pk=example.pk)
    task = example.round.task
    return render(
        request,
        "annotation/retract_confirm.html",
        {
            "example": example,
            "task": task,
            "inputs": [
                (spec.get("label", spec["name"]), example.inputs.get(spec["name"], ""))
                for spec in task.cfg.input_fields
            ],
        },
    )


@login_required
@require_POST
def retract(request, pk: int):
    """Retract the author's example: it leaves the counts and the validation queue."""
    example = _own_example(request, pk)
    try:
        services.retract_example(example=example, user=request.user)
    except services.ExampleError as exc:  # a competition round's examples cannot be retracted
        for message in exc.errors.get(services.NON_FIELD, []) or [str(exc)]:
            messages.error(request, message)
    else:
        messages.success(request, "Example retracted. It no longer counts.")
    return redirect("annotation:outcome", pk=example.pk)


@login_required
@require_POST
def flag(request, pk: int):
    """Flag the author's own example for the task owners; on an error, show the page again with the reason."""
    example = _own_example(request, pk)
    form = FlagForm(request.POST)
    if form.is_valid():
        try:
            services.flag_example(example=example, user=request.user, reason=form.cleaned_data["reason"])
        except services.ExampleError as exc:
            _show_errors(request, form, exc)
        else:
            messages.success(request, "Example flagged for the task owners.")
            return redirect("annotation:outcome", pk=example.pk)
    example.refresh_from_db()
    return _render_outcome(request, example, flag_form=form)


@login_required
@require_POST
def model_wrong_verdict(request, pk: int):
    """``ask_user`` tasks: the author says whether the model got the example wrong (``wrong=yes|no``)."""
    example = _own_example(request, pk)
    answer = request.POST.get("wrong", "")
    if answer not in ("yes", "no"):
        messages.error(request, "Answer yes (the model was wrong) or no (the model was right).")
    else:
        try:
            record_user_verdict(example=example, user=request.user, model_wrong=answer == "yes")
        except services.ExampleError as exc:
            for message in exc.errors.get(services.NON_FIELD, []) or [str(exc)]:
                messages.error(request, message)
        else:
            messages.success(request, "Thank you: your answer is saved.")
    return redirect("annotation:outcome", pk=example.pk)
