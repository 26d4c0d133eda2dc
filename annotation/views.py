"""The annotator's pages: write an example (the verdict shown on the page), see the outcome, explain,
retract (after a confirm step) or flag it."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render, resolve_url
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_POST

from core.text_rules import ascii_id
from tasks import qualification
from tasks import selectors as task_selectors
from tasks.models import Task

from . import selectors, services, session_examples, verdict
from .ask_user import awaits_user_verdict, record_user_verdict
from .forms import SPAN_START_FIELD, UNSTAMPED, ExampleForm, ExplanationForm, FlagForm, signed_start
from .red_team import presenting as red_team_presenting


def _round_changed(task: Task, sent_round: str | None) -> bool:
    """True when the form was served in another round than the current one.

    A form without the field (an older page) is taken as written for the current round.
    """
    return bool(sent_round) and sent_round != str(task.current_round_id)


def _earlier_round_number(task: Task, sent_round: str) -> int | None:
    """The number of ``task``'s round whose id the form sent, or None (unknown or malformed id)."""
    round_id = ascii_id(sent_round)  # never "²" or 5,000 digits
    if round_id is None:
        return None
    return task.rounds.filter(pk=round_id).values_list("number", flat=True).first()


def _round_changed_message(task: Task, sent_round: str) -> str:
    earlier = _earlier_round_number(task, sent_round)
    where = f"Round {earlier} closed and round" if earlier is not None else "Round"
    return (
        f"{where} {task.current_round.number} opened while you were writing, with its own target "
        "model. Your example was not saved; check it and send it again to submit it to "
        f"round {task.current_round.number}."
    )


def _context_noun(cfg) -> str:
    """What the task calls its context, for messages: the label of its first required context field
    (else of its first one), in lower case: "premise" (NLI), "passage" (QA), "prompt"."""
    specs = [spec for spec in cfg.context_fields if not spec.get("optional", False)] or cfg.context_fields
    return str(specs[0].get("label", specs[0]["name"])).lower() if specs else "context"


def _context_gone_message(task: Task, written_for, sent_round: str | None) -> str:
    """Why a form was refused whose context can no longer take examples: ``written_for`` is that
    context (a ``Context`` of another round) or None (deleted, another task's, or none sent).

    E.g. "The premise you wrote for is no longer available (round 1 closed and round 2 opened while you
    were writing), so your example was not saved."
    """
    reason = ""
    if _round_changed(task, sent_round):
        earlier = _earlier_round_number(task, sent_round)
        closed = f"round {earlier} closed and " if earlier is not None else ""
        reason = f" ({closed}round {task.current_round.number} opened while you were writing)"
    elif written_for is not None:
        reason = " (its round is over)"
    return (
        f"The {_context_noun(task.cfg)} you wrote for is no longer available{reason}, so your example "
        "was not saved."
    )


CONTEXT_MISMATCH = (
    "This form was written for another {noun} than the one the page showed (a browser can put back "
    "old text when you go Back). It was not saved. Here it is again with the {noun} it was written for: "
    "check it and send it again."
)


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
        request.user, task.current_round, session_examples.session_example_ids(request, task)
    )
    text = f"{fooled} of {written} fooled the model in this session." if written else NO_SESSION_EXAMPLES
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
    """Write an example: the server runs the target model(s), then redirects to the outcome page.

    A task with context fields serves a context (``tasks.selectors.next_context``, least used first,
    optional ``?tag=``; ``?skip=<context id>`` serves another one than that, "Skip this context") and
    carries its id twice: in the hidden ``context`` field, next to the context's text, and signed with the
    form token in ``started`` (``forms.signed_start``). A POST is saved on the context the form was served
    with, never on another (docs/domain.md, "Context serving"):

    * when the two differ (a browser put a form's values back into a page showing another context), it
      is refused and shown again with the context it was written for;
    * when that context can no longer take examples (its round is over, it was deleted), it is refused:
      the page serves a new context with an empty form, and shows the refused text apart (``unsaved``),
      to copy, never in the form;
    * a form without a stamp naming its context (a page served before) is taken as written for the
      ``context`` it sends, which must be of the current round.

    The form asks the browser not to restore its values on Back (``autocomplete="off"``), so a hypothesis
    is never offered, ready to send, under a premise it was not written for.
    ``?variation=<example id>`` prefills the form with the requester's own example of this task (its
    text, label or span answer and, while it is in the current round, its context, with the answer's
    offset when the context is its own); someone else's is a 404.

    A POST sent by the page's script (header ``X-Requested-With: fetch``, ``static/annotation/create.js``)
    gets an HTML fragment instead of a redirect: on success the verdict (``_create_result.html``, status
    200) carrying a fresh form token (``data-client-token``, ``data-started``) so that the text kept in
    the box is sent as a new example next time; on an error the messages (``_create_errors.html``,
    status 422) and the hidden values to send next. Without the script the POST redirects as always.

    A POST is always bound and shown back on any error, so the annotator never loses the text: also
    when the round closed while they were writing (the text is then shown read-only), when another round
    opened meanwhile (the hidden ``round`` field names the round the form was served in; sending again
    submits to the new round), and when the form token was already used for another example (the form
    then gets a fresh token).

    The session tally ("2 of 3 fooled the model in this session") counts the examples written through
    this page and the red-teaming pages in this browser session (their ids are kept in the session,
    ``session_examples.remember_example``) that are
    still in the current round and not retracted (``reset_tally`` empties it). The page's script keeps the
    text when the session has run out (it checks the answer against ``login_url``; the next send reads
    the CSRF cookie ``csrf_cookie_name``, which signing in renews) and counts characters
    against each box's ``data-max-length`` (code points, as the service does).

    The task's qualification rules (``tasks.qualification.check_can_contribute``): on a GET, a worker who
    has to see the tutorial or pass the quiz is sent there (``?next=`` back here); a blocked, unlisted,
    held, capped or competition-limited one sees the message instead of the form. A POST goes to the
    service, which checks the same rules and refuses with the message above the text kept.
    """
    task = task_selectors.task_or_404(slug)
    cfg = task.cfg
    if cfg.is_red_team:  # its examples are conversations and multiple-choice items (annotation/red_team/)
        return redirect("annotation:red_team", slug=task.slug)
    collecting = task.open_round is not None
    refusal = None
    if request.method != "POST" and collecting and request.user.can_contribute:
        try:
            qualification.check_can_contribute(task, request.user, qualification.WRITE, lock=False)
        except qualification.NotQualified as exc:
            if exc.url:
                return redirect(qualification.with_next(exc.url, request.get_full_path()))
            refusal = exc
    needs_context = bool(cfg.context_fields) and collecting
    # A task whose context fields are all optional (sentiment's prompt) can be written without one.
    context_required = any(not spec.get("optional", False) for spec in cfg.context_fields)
    context = None
    form = None
    initial = {}
    context_gone = ""  # why the form's context was refused, shown above its text (``unsaved``)
    unsaved: list[tuple[str, str]] = []
    fetch = request.method == "POST" and _is_fetch(request)
    if request.method == "POST":
        form = ExampleForm(cfg, request.POST)
        sent_context = (request.POST.get("context") or "").strip() or None
        # The context the form was served with: its signed stamp says which; a form without one (an
        # older page) is taken as written for the context it sends.
        stamped = form.stamped_context()
        written_for = sent_context if stamped is UNSTAMPED else stamped
        mismatch = stamped is not UNSTAMPED and (None if stamped is None else str(stamped)) != sent_context
        if needs_context and written_for is not None:
            context = task_selectors.context_of_round(task.current_round, written_for)
        gone = needs_context and context is None and (context_required or written_for is not None)
        form.context_id = context.pk if context else None  # signed into a renewed token's stamp
        valid = form.is_valid()
        if not collecting:
            form.add_error(
                None, "This task is not collecting examples right now; your example was not saved."
            )
            for name in form.input_names:
                form.fields[name].widget.attrs["readonly"] = True
        elif gone:
            # Never on another context: the text is shown apart, to copy, and a new context comes with
            # an empty form (the script sends it the plain way, which renders that page).
            old = selectors.context_of_task(task, written_for)
            context_gone = _context_gone_message(task, old, request.POST.get("round"))
            if fetch:
                form.add_error(None, context_gone)
                return _create_errors(request, task, form, reload=True)
            unsaved = _unsaved_rows(cfg, request.POST, old)
            form = None
        elif _round_changed(task, request.POST.get("round")):
            form.add_error(None, _round_changed_message(task, request.POST.get("round")))
        elif needs_context and mismatch:
            # Shown again with the context it was written for (``context``), never saved on the other.
            form.add_error(None, CONTEXT_MISMATCH.format(noun=_context_noun(cfg)))
            if fetch:
                return _create_errors(request, task, form, reload=True)
        elif valid:
            try:
                example, _created = services.create_example(
                    task=task,
                    annotator=request.user,
                    inputs=form.inputs,
                    target=form.target,
                    context=context,
                    client_token=form.cleaned_data["client_token"],
                    time_taken_ms=form.time_taken_ms,
                )
            except services.TokenAlreadyUsed as exc:
                form.add_service_errors(exc)
                form.renew_token()
            except services.ExampleError as exc:
                form.add_service_errors(exc)
            else:
                session_examples.remember_example(request, task, example.pk)
                if fetch:
                    return _create_result(request, task, example)
                return redirect("annotation:outcome", pk=example.pk)
        if fetch:
            return _create_errors(request, task, form, reload=False)
    elif request.GET.get("variation"):
        variation = selectors.own_example_of_task(request.user, task, request.GET["variation"])
        if variation is None:
            raise Http404("No example of yours with that id in this task.")
        if needs_context and variation.context_id and variation.context.round_id == task.current_round_id:
            context = variation.context
        initial = _variation_initial(task, variation, same_context=context is not None)
    skipped = ascii_id(request.GET.get("skip")) if request.method != "POST" else None
    # A form shown again keeps the context it was written for (none, for a task whose context is
    # optional); a new form gets the next one.
    if needs_context and context is None and form is None:
        context = task_selectors.next_context(
            round_=task.current_round, tag=request.GET.get("tag") or None, exclude=skipped
        )
    if form is None:
        form = ExampleForm(cfg, initial=initial, context_id=context.pk if context else None)
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
            "context_missing": needs_context and context is None and context_required,
            "served_context": context,
            "context_gone": context_gone,
            "unsaved": unsaved,
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
    return {
        "example": example,
        "task": task,
        "inputs": [
            (worded(spec.get("label", spec["name"])), example.inputs.get(spec["name"], ""))
            for spec in cfg.input_fields
        ],
        "target_label": worded(cfg.target_field.get("label", "Target")),
        "prediction_rows": verdict.prediction_rows(example, selectors.predictions_of(example), cfg),
        "close_call_margin": cfg.close_call_margin,
        "is_author": is_author,
        "asks_user": is_author and awaits_user_verdict(example),
        "ask_user_rule": cfg.model_wrong_rule == "ask_user",
        "validation_state": verdict.validation_state(example, cfg, is_author=is_author),
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
        if task.cfg.is_red_team and red_team_presenting.mode_of(example)
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
