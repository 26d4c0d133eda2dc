"""The red-teaming pages: hold a conversation with the round's target and judge its answers with the
rubric, or write a multiple-choice item (docs/generative.md, "The red-teaming pages").

Every action is a plain form post that works without JavaScript (post, redirect, get: the page then shows
the whole answer). ``static/annotation/red_team.js`` sends the same form with ``Accept:
text/event-stream`` and shows the answer as it streams (``sse.sse_response``); the server's rules are the
same either way, because both go through ``conversations.send_turn``.
"""

from __future__ import annotations

import uuid
from functools import partial

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from annotation.models import Turn
from annotation.session_examples import remember_example
from core.text_rules import ascii_id
from models_registry.queue_full import queue_full_response
from models_registry.serving import QueueFull
from tasks import qualification
from tasks import selectors as task_selectors
from tasks.kinds import conversational
from tasks.models import Task

from . import selectors
from .choice_items import MODE as CHOICE_MODE
from .choice_items import write_choice_item
from .conversations import (
    CandidateStreams,
    ConversationError,
    abandon_conversation,
    send_message,
    submit_conversation,
    thread,
)
from .presenting import rubric_answers_from, rubric_questions
from .side_by_side import rate_answers
from .sse import sse_response
from .throttling import TurnThrottle


def _red_team_task(slug: str) -> Task:
    task = task_selectors.task_or_404(slug)
    if not conversational(task.cfg):
        raise Http404("Not a red-teaming task.")
    return task


def _refusal(request, task: Task):
    """Why the user may not red-team ``task`` now (a message), a redirect to the tutorial or quiz, or
    None when they may."""
    if task.open_round is None:
        return "This task is not collecting examples right now."
    if not request.user.can_contribute:
        return "Your account is blocked from writing examples."
    try:
        qualification.check_can_contribute(task, request.user, qualification.WRITE, lock=False)
    except qualification.NotQualified as exc:
        if exc.url:
            return redirect(qualification.with_next(exc.url, request.get_full_path()))
        return exc.message
    return None


def _rubric_rows(cfg, chosen: dict | None = None) -> list[dict]:
    """The rubric as the page's form shows it (``presenting.rubric_questions``), with the answers chosen
    before a refusal."""
    chosen = chosen or {}
    return [{**q, "chosen": chosen.get(q["name"], "")} for q in rubric_questions(cfg)]


def _rating_rows(cfg, answers: list[Turn], rated: dict) -> list[dict]:
    """The rating form of each side-by-side answer that came: ``{"turn", "letter", "score", "touched",
    "rubric" (``_rubric_rows`` with fields ``<letter>-rubric-<name>``), "categories"}``, with what was
    sent before a refusal (``rated``: ``side_by_side_from``'s form). ``touched``: a score was sent; the
    page's script sends no score for a slider left untouched (it would be 50 that nobody chose)."""
    rows = []
    for turn in answers:
        if turn.status != Turn.Status.ANSWERED:
            continue
        letter = turn.slot_letter
        sent = rated.get(letter, {})
        rubric = [
            {**q, "field": f"{letter}-{q['field']}"} for q in _rubric_rows(cfg, sent.get("rubric") or {})
        ]
        categories = [
            {**c, "chosen": c["name"] in (sent.get("categories") or ())} for c in cfg.failure_categories
        ]
        rows.append(
            {
                "turn": turn,
                "letter": letter,
                "score": sent.get("score") or 50,
                "touched": bool(sent.get("score")),
                "rubric": rubric,
                "categories": categories,
            }
        )
    return rows


def side_by_side_from(data) -> dict[str, dict]:
    """The ratings a side-by-side rating form sent: ``{letter: {"score", "rubric", "categories"}}``, one
    per letter of a ``<letter>-score``, ``<letter>-rubric-<name>`` or ``<letter>-category`` field; the
    score as sent (text), None when none was (a slider the page's script left unnamed because it was
    never touched), checked by ``side_by_side.rate_answers``."""
    letters = sorted(
        {
            letter
            for letter, _, rest in (key.partition("-") for key in data)
            if rest == "score" or rest == "category" or rest.startswith("rubric-")
        }
    )
    return {
        letter: {
            "score": data.get(f"{letter}-score"),
            "rubric": rubric_answers_from(
                {k[len(letter) + 1 :]: v for k, v in data.items() if k.startswith(f"{letter}-")}
            ),
            "categories": data.getlist(f"{letter}-category"),
        }
        for letter in letters
    }


def _context_rows(cfg, context) -> list[tuple[str, str]]:
    if context is None:
        return []
    return [
        (spec.get("label", spec["name"]), context.data.get(spec["name"], "")) for spec in cfg.context_fields
    ]


@login_required
def red_team(request, slug: str):
    """The conversation page: the goal, the passage, the conversation so far with the round's target, the
    message box (while fewer than ``max_turns`` turns) and, once the model answered, the rubric and the
    failure categories. A user with an open conversation in the current round gets it back (in any tab);
    otherwise a new passage is served (least used first; ``?skip=<id>`` serves another)."""
    task = _red_team_task(slug)
    return _page(request, task)


def _page(
    request,
    task: Task,
    *,
    prompt: str = "",
    error: str = "",
    chosen: dict | None = None,
    chosen_categories: list[str] | None = None,
    rated: dict | None = None,
    rated_choice: str = "",
    status=200,
):
    """The conversation page of ``task`` for the requester; a refused message or judgement comes back in
    it: ``error`` said above the form, ``prompt`` kept in the box, the rubric answers ``chosen`` and the
    categories ``chosen_categories`` kept."""
    cfg = task.cfg
    refusal = _refusal(request, task)
    if isinstance(refusal, HttpResponse):
        return refusal
    conversation = None
    context = None
    turns: list[Turn] = []
    side_answers: list[Turn] = []
    if refusal is None:
        conversation = selectors.open_conversation(request.user, task.current_round)
        if conversation is not None:
            context = conversation.context
            every = list(conversation.turns.select_related("rating"))
            turns = thread(conversation, every)
            side_answers = [t for t in every if t.slot is not None]
        elif cfg.context_fields:
            skipped = ascii_id(request.GET.get("skip"))
            context = task_selectors.next_context(round_=task.current_round, exclude=skipped)
    answered = [t for t in turns if t.status == Turn.Status.ANSWERED]
    context_missing = refusal is None and bool(cfg.context_fields) and context is None
    to_rate = bool(side_answers) and conversation.chosen_turn_id is None
    if chosen is None and len(turns) == 1 and turns[0].slot is not None:
        # The conversation is the chosen answer alone: its rating's rubric answers are the judgement so far.
        rating = getattr(turns[0], "rating", None)
        if rating is not None:
            chosen, chosen_categories = rating.answers, rating.tags
    # Side by side: the models stay anonymous to their writer until the conversation is judged.
    anonymous = bool(cfg.side_by_side) if conversation is None else bool(conversation.side_by_side)
    return render(
        request,
        "annotation/red_team.html",
        {
            "task": task,
            "cfg": cfg,
            "refusal": refusal,
            "error": error,
            "context_missing": context_missing,
            "conversation": conversation,
            "context": context,
            "context_rows": _context_rows(cfg, context),
            "turns": turns,
            "can_send": refusal is None
            and not context_missing
            and len(turns) < cfg.max_turns
            and not to_rate,
            "can_judge": bool(answered)
            and not to_rate
            and not any(t.status == Turn.Status.ANSWERING for t in turns),
            "answered_turns": len(answered),
            "side_by_side": conversation.side_by_side if conversation else (cfg.side_by_side or 0),
            "side_answers": side_answers,
            "to_rate": to_rate,
            "rating_rows": _rating_rows(cfg, side_answers, rated or {}) if to_rate else [],
            "rating_busy": any(t.status == Turn.Status.ANSWERING for t in side_answers),
            "chosen_letter": rated_choice if to_rate else "",
            "rubric": _rubric_rows(cfg, chosen),
            "categories": [
                {**c, "chosen": c["name"] in (chosen_categories or ())} for c in cfg.failure_categories
            ],
            "client_token": uuid.uuid4(),
            "choice_mode": CHOICE_MODE in cfg.red_team_modes,
            "target": conversation.model.name if conversation and not anonymous else None,
            "prompt": prompt,
        },
        status=status,
    )


def _wants_stream(request) -> bool:
    return "text/event-stream" in request.headers.get("Accept", "")


def _error(request, task: Task, message: str, *, status: int = 400):
    """A refusal: to the page's script as plain text with ``status``; otherwise a message and back to the
    page (where the conversation, and the text, if any, wait)."""
    if _wants_stream(request) or request.headers.get("X-Requested-With") == "fetch":
        return HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")
    messages.error(request, message)
    return redirect("annotation:red_team", slug=task.slug)


STATUS_OF_CODE = {"not_found": 404, "invalid": 400, "too_long": 400, "blocked": 403}


def _throttled(request, task, prompt: str):
    """The 429 (with ``Retry-After``) for a writer over the turn rate (``throttling.TurnThrottle``), the
    message kept in the box; None under it."""
    throttle = TurnThrottle()
    if throttle.allow_request(request, None):
        return None
    error, wait = throttle.refusal()
    if _wants_stream(request) or request.headers.get("X-Requested-With") == "fetch":
        response = _error(request, task, error, status=429)
    else:
        response = _page(request, task, prompt=prompt, error=error, status=429)
    response["Retry-After"] = str(wait)
    return response


@login_required
@require_POST
def send(request, slug: str):
    """Send a message: to the open conversation named by ``conversation``, or, without one, to a new
    conversation on the ``context`` the page served. ``client_token`` makes a resent form a no-op. With
    ``Accept: text/event-stream`` the answer streams back (``sse.sse_response``); otherwise the whole
    answer is generated and the page shown again with it. A refused message comes back in the box, with
    why above it (to the page's script: plain text with a 4xx status)."""
    task = _red_team_task(slug)
    refusal = _refusal(request, task)
    if refusal is not None:
        return _error(
            request, task, refusal if isinstance(refusal, str) else "Finish the tutorial first.", status=403
        )
    prompt = request.POST.get("prompt", "")
    if (throttled := _throttled(request, task, prompt)) is not None:
        return throttled
    try:
        token = uuid.UUID(request.POST.get("client_token", ""))
    except ValueError:
        token = None
    try:
        stream = send_message(
            round_=task.current_round,
            annotator=request.user,
            conversation_id=ascii_id(request.POST.get("conversation")),
            context_id=request.POST.get("context"),
            prompt=prompt,
            client_token=token,
        )
    except ConversationError as exc:
        status = STATUS_OF_CODE.get(exc.code, 409)
        if _wants_stream(request) or request.headers.get("X-Requested-With") == "fetch":
            return _error(request, task, str(exc), status=status)
        return _page(request, task, prompt=prompt, error=str(exc), status=status)
    except qualification.NotQualified as exc:
        return _error(request, task, exc.message, status=403)
    except QueueFull as exc:  # 503 with Retry-After; the page keeps the message in the box
        page = partial(_page, request, task, prompt=prompt, error=str(exc), status=503)
        return queue_full_response(request, exc, page=page)
    if _wants_stream(request):
        return sse_response(request, stream)
    if isinstance(stream, CandidateStreams):
        broken = [t.slot_letter for t in stream.drain() if t.status == Turn.Status.FAILED]
        if broken:
            messages.warning(request, f"Answer {', '.join(broken)} broke off; rate the answers that came.")
        return redirect(reverse("annotation:red_team", args=[task.slug]) + "#answers")
    turn = stream.drain()
    if turn.status == Turn.Status.FAILED or (turn.generation or {}).get("finish_reason") in (
        "error",
        "timeout",
    ):
        messages.warning(
            request, f"The model's answer broke off: {turn.error or 'it stopped'}. What came is kept."
        )
    return redirect(reverse("annotation:red_team", args=[task.slug]) + f"#turn-{turn.index}")


@login_required
@require_POST
def judge(request, slug: str):
    """Answer the rubric for the conversation (``conversation``): every question's answer
    (``rubric-<name>``) and, for a failure, its categories (``category``, several), with the number of
    answered turns the page showed (``answered_turns``). The conversation becomes an example; the page
    then serves a new passage. A refusal shows the page again with the answers chosen: also a
    conversation already judged otherwise (with the stored judgement), or one that has answers the
    page did not show (another tab went on with it)."""
    task = _red_team_task(slug)
    conversation = selectors.own_conversation(request.user, ascii_id(request.POST.get("conversation")))
    if conversation is None:
        raise Http404("No such conversation.")
    answers = rubric_answers_from(request.POST)
    try:
        example = submit_conversation(
            conversation=conversation,
            annotator=request.user,
            rubric_answers=answers,
            categories=request.POST.getlist("category"),
            # What the page showed (its hidden field): a stale tab cannot judge answers it never showed.
            answered_turns=ascii_id(request.POST.get("answered_turns")),
        )
    except ConversationError as exc:
        return _page(
            request,
            task,
            error=str(exc),
            chosen=answers,
            chosen_categories=request.POST.getlist("category"),
            status=STATUS_OF_CODE.get(exc.code, 409),
        )
    remember_example(request, task, example.pk)  # the session tally counts it, as the create page's
    verdict = "a failure of the model" if example.model_wrong else "a good answer"
    # Judged, the side-by-side answers are named to their writer, as an arena names the models after the
    # vote: nothing the writer does with this conversation can be swayed by the names any more.
    side = (example.metadata or {}).get("side_by_side") or []
    named = "; ".join(f"answer {a['slot']} was {a['model']}" for a in side)
    messages.success(
        request,
        f"Stored as example {example.pk}: you judged it {verdict}. Validators will judge it too. "
        + (f"The models, now that it is judged: {named}. " if named else "")
        + "Here is a new passage.",
    )
    return redirect("annotation:red_team", slug=task.slug)


@login_required
@require_POST
def rate(request, slug: str):
    """Rate the side-by-side answers to the first message (``<letter>-score`` 1-100, the rubric as
    ``<letter>-rubric-<name>``, ``<letter>-category``) and choose the one to go on with (``chosen``);
    the page then continues the conversation with it. A refusal shows the page again with what was
    chosen."""
    task = _red_team_task(slug)
    conversation = selectors.own_conversation(request.user, ascii_id(request.POST.get("conversation")))
    if conversation is None:
        raise Http404("No such conversation.")
    ratings = side_by_side_from(request.POST)
    chosen = request.POST.get("chosen")
    try:
        rated = rate_answers(
            conversation=conversation, annotator=request.user, ratings=ratings, chosen=chosen
        )
    except ConversationError as exc:
        return _page(
            request,
            task,
            error=str(exc),
            rated=ratings,
            rated_choice=chosen or "",
            status=STATUS_OF_CODE.get(exc.code, 409),
        )
    messages.success(
        request,
        f"Your ratings are stored. You go on with answer {rated.chosen_turn.slot_letter}; write your next "
        "message, or judge the conversation.",
    )
    return redirect(reverse("annotation:red_team", args=[task.slug]) + "#turns")


@login_required
@require_POST
def new_conversation(request, slug: str):
    """Leave the open conversation unjudged and serve a new passage."""
    task = _red_team_task(slug)
    conversation = selectors.own_conversation(request.user, ascii_id(request.POST.get("conversation")))
    if conversation is not None:
        abandon_conversation(conversation=conversation, annotator=request.user)
    return redirect("annotation:red_team", slug=task.slug)


@login_required
def choice(request, slug: str):
    """Write a multiple-choice item: a question on the passage, its correct answer and hard negatives
    (at least ``min_negatives``). The server asks the target which option it picks and shows whether it
    was fooled. A refused item is shown again with everything typed."""
    task = _red_team_task(slug)
    cfg = task.cfg
    if CHOICE_MODE not in cfg.red_team_modes:
        raise Http404("This task takes no multiple-choice items.")
    refusal = _refusal(request, task)
    if isinstance(refusal, HttpResponse):
        return refusal
    values = {"question": "", "answer": "", "negatives": [""] * (cfg.max_options - 1)}
    context = None
    busy: QueueFull | None = None
    if request.method == "POST" and refusal is None:
        values["question"] = request.POST.get("question", "")
        values["answer"] = request.POST.get("answer", "")
        sent = request.POST.getlist("negative")[: cfg.max_options - 1]
        values["negatives"] = sent + [""] * (cfg.max_options - 1 - len(sent))
        try:
            token = uuid.UUID(request.POST.get("client_token", ""))
        except ValueError:
            token = None
        if cfg.context_fields:
            context = task_selectors.context_of_round(task.current_round, request.POST.get("context"))
        try:
            if cfg.context_fields and context is None:
                raise ConversationError(
                    "That passage is no longer open; here is another one.", code="bad_context"
                )
            example, _created = write_choice_item(
                round_=task.current_round,
                annotator=request.user,
                context=context,
                question=values["question"],
                answer=values["answer"],
                negatives=sent,
                client_token=token,
            )
        except ConversationError as exc:
            messages.error(request, str(exc))
        except qualification.NotQualified as exc:
            messages.error(request, exc.message)
        except QueueFull as exc:  # 503 with Retry-After, the item shown again as typed
            busy = exc
            messages.error(request, str(exc))
        else:
            remember_example(request, task, example.pk)  # the session tally counts it
            outcome = (
                "picked a wrong option: you fooled it" if example.model_wrong else "picked the right option"
            )
            messages.success(request, f"Stored as example {example.pk}. The model {outcome}.")
            return redirect(reverse("annotation:red_team_choice", args=[task.slug]) + f"?last={example.pk}")
    if refusal is None and cfg.context_fields and context is None:
        context = task_selectors.next_context(
            round_=task.current_round, exclude=ascii_id(request.GET.get("skip"))
        )
    last = selectors.own_choice_item(request.user, ascii_id(request.GET.get("last")))
    response = render(
        request,
        "annotation/red_team_choice.html",
        {
            "task": task,
            "cfg": cfg,
            "refusal": refusal,
            "context": context,
            "context_rows": _context_rows(cfg, context),
            "context_missing": refusal is None and bool(cfg.context_fields) and context is None,
            "values": values,
            "client_token": uuid.uuid4(),
            "last": last,
            "last_options": [
                (i, option, i == last.target.get("answer"), i == (last.metadata or {}).get("picked"))
                for i, option in enumerate(last.inputs.get("options", []))
            ]
            if last
            else [],
        },
    )
    return response if busy is None else queue_full_response(request, busy, page=lambda: response)
