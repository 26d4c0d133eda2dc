"""Writes of the annotation-assistant study: a person's arm, the assistant's suggestions, and the
example that took one (docs/domain.md, "Annotation assistants"; Bartolo et al. 2022, "Models in the
Loop: Aiding Crowdworkers with Generative Annotation Assistants", NAACL).

An arm with an assistant proposes a candidate example for the person's current context: its prompt
(config ``assistant.arms[].prompt``, with ``{context}``, ``{label}``, ``{labels}`` and
``{instructions}`` filled) sent as one user message to the arm's generative model, sampled (temperature
0.9, top-p 0.95, a fresh seed each time: a second ask proposes something else). The person may take it,
edit it or ignore it; an example sent with a suggestion's id records the suggestion and the edit
distance from it to the text sent.
"""

from __future__ import annotations

import dataclasses
import secrets
import time
import uuid

from django.core.cache import cache
from django.db import transaction
from django.db.models import Q
from rapidfuzz.distance import Levenshtein

from core.text_rules import ascii_id, normalise_newlines
from models_registry.generative import decoding_of, generate_batch
from models_registry.kinds import chat_models
from models_registry.models import RegisteredModel
from tasks.kinds import labelled
from tasks.models import Context, Task

from .. import services as annotation_services
from ..models import Example, Suggestion
from .arms import Arm, arms_of, assigned_arm

TEMPERATURE, TOP_P = 0.9, 0.95
#: How long one person's ask holds their place (``suggest``): longer than any model's timeout.
FLIGHT_SECONDS = 300
#: How long an example being stored holds the suggestion it takes (``claim_suggestion``).
CLAIM_SECONDS = 120


class AssistantError(Exception):
    """A suggestion that cannot be made, or one an example cannot take. ``code``: ``no_study`` (the
    task has no assistant arms), ``no_assistant`` (the person's arm writes without one),
    ``unavailable`` (the arm's model is missing, not ready, or not generative), ``failed`` (the model
    did not answer), ``not_yours`` (a suggestion of someone else, another round, or already used),
    ``invalid`` (a bad label or context), ``busy`` (the person's last ask, or another example taking the
    same suggestion, is still under way)."""

    def __init__(self, message: str, *, code: str):
        super().__init__(message)
        self.message = message
        self.code = code


def arm_for(task: Task, worker) -> Arm | None:
    """``worker``'s arm in the task's current round (assigned now if they have none), or None when the
    task has no assistant arms or no current round."""
    arms = arms_of(task.cfg)
    round_ = task.current_round
    if not arms or round_ is None:
        return None
    name = assigned_arm(round_, worker, arms)
    # An arm the owner removed since: the person writes without an assistant.
    return next((arm for arm in arms if arm.name == name), Arm(name=name, share=0))


def assistant_model(reference: str) -> RegisteredModel:
    """The registered model ``"task-slug/model-name"`` an arm names, ready and generative.

    Raises:
        AssistantError: ``unavailable``, saying which of those it is not.
    """
    slug, _, name = reference.partition("/")
    model = RegisteredModel.objects.filter(task__slug=slug, name=name).select_related("task").first()
    if model is None:
        raise AssistantError(f"The assistant {reference!r} is not a registered model.", code="unavailable")
    if not chat_models(model.task.cfg):
        raise AssistantError(
            f"The assistant {reference!r} is a classifier, not a generative model: an assistant writes text.",
            code="unavailable",
        )
    if model.status != RegisteredModel.Status.READY:
        raise AssistantError(
            f"The assistant {reference!r} is not ready ({model.status}).", code="unavailable"
        )
    return model


def render_prompt(arm: Arm, task: Task, context: Context | None, label: str) -> str:
    """The arm's prompt with its placeholders filled: ``{context}`` the context's fields as
    ``label: text`` lines (empty without one), ``{label}`` the label asked for (or "any label"),
    ``{labels}`` the task's labels joined by ", ", ``{instructions}`` the task's instructions.

    Raises:
        AssistantError: ``unavailable``, for a prompt that cannot be filled.
    """
    cfg = task.cfg
    lines = [
        f"{spec.get('label', spec['name'])}: {(context.data or {}).get(spec['name'], '')}"
        for spec in cfg.context_fields
    ] if context is not None else []  # fmt: skip
    values = {
        "context": "\n".join(lines),
        "label": label or "any label",
        "labels": ", ".join(cfg.labels),
        "instructions": task.instructions,
    }
    try:
        return arm.prompt.format(**values)
    except (KeyError, IndexError, ValueError, AttributeError) as exc:
        # The config check refuses such a prompt; one saved before that check, or by hand, fails here.
        raise AssistantError(
            f"The assistant's prompt cannot be filled ({type(exc).__name__}: {exc}); the task's owners can fix it.",
            code="unavailable",
        ) from None


def _cleaned(text: str, limit: int) -> str:
    """The first non-empty line of the model's answer, without surrounding quotes, at most ``limit``
    characters."""
    for line in normalise_newlines(text).split("\n"):
        line = line.strip().strip('"“”').strip()
        if line:
            return line[:limit]
    return ""


def suggest(*, task: Task, worker, context: Context | None, label: str = "") -> Suggestion:
    """Ask the worker's arm's assistant for a candidate example on ``context`` (for ``label``, optional),
    and store it.

    Raises:
        annotation.services.ExampleError: the worker may not write here (blocked, the task's rules).
        AssistantError: ``no_study``, ``no_assistant``, ``unavailable``, ``failed``, ``invalid`` or
            ``busy`` (their last ask is still being answered).
    """
    cfg = task.cfg
    round_ = task.open_round
    if round_ is None:
        raise AssistantError("This task is not collecting examples right now.", code="invalid")
    annotation_services.check_can_write(worker, task)
    arm = arm_for(task, worker)
    if arm is None:
        raise AssistantError("This task has no annotation assistant.", code="no_study")
    if not arm.has_assistant:
        raise AssistantError("In this round you write without an assistant.", code="no_assistant")
    if label and (not labelled(cfg) or label not in cfg.labels):
        raise AssistantError(f"Choose one of: {', '.join(cfg.labels)}.", code="invalid")
    if context is not None and context.round_id != round_.pk:
        raise AssistantError("This context is not part of the current round.", code="invalid")
    if context is None and cfg.context_required:
        raise AssistantError("An assistant needs the context you are writing on.", code="invalid")
    model = assistant_model(arm.model)
    # One ask in flight per person: a burst of asks from one tab or script would take every generation
    # slot of the model and leave the other writers a "busy" answer.
    flight = f"assistant:asking:{round_.pk}:{worker.pk}"
    if not cache.add(flight, 1, timeout=FLIGHT_SECONDS):
        raise AssistantError("Your last ask is still being answered; wait for it.", code="busy")
    try:
        return _ask(task, worker, arm, model, round_, context, label)
    finally:
        cache.delete(flight)


def _ask(task: Task, worker, arm: Arm, model: RegisteredModel, round_, context, label: str) -> Suggestion:
    """The model's suggestion for ``suggest``, stored."""
    cfg = task.cfg
    decoding = dataclasses.replace(
        decoding_of(model),
        temperature=TEMPERATURE,
        top_p=TOP_P,
        max_new_tokens=arm.max_new_tokens,
        seed=secrets.randbelow(2**31),
    )
    started = time.monotonic()
    prompt = render_prompt(arm, task, context, label)
    (generation,) = generate_batch(model, [[{"role": "user", "content": prompt}]], decoding)
    field = cfg.input_fields[0]
    text = _cleaned(generation.text, cfg.max_length_of(field))
    if generation.finish_reason == "error" or not text:
        reason = generation.error or "it answered with nothing usable"
        raise AssistantError(f"The assistant could not propose an example: {reason}.", code="failed")
    return Suggestion.objects.create(
        round=round_,
        worker=worker,
        arm=arm.name,
        model=model,
        context=context,
        label=label,
        text=text,
        seconds=round(time.monotonic() - started, 3),
    )


def usable_suggestion(task: Task, worker, suggestion_id, *, client_token=None) -> Suggestion | None:
    """The suggestion ``suggestion_id`` if an example of ``worker`` may take it: theirs, of the task's
    current round and not taken by another example (one sent again with the same ``client_token``, a
    double click, may: it is the same example); None for no id.

    Raises:
        AssistantError: ``not_yours`` for any other id (someone else's, another round's, used, unknown).
    """
    if suggestion_id in (None, ""):
        return None
    pk = ascii_id(str(suggestion_id), max_digits=18)  # a bigint; never "²" or 5,000 digits
    free = Q(example__isnull=True)
    try:
        client_token = uuid.UUID(str(client_token)) if client_token is not None else None
    except ValueError:  # create_example refuses it with its own message
        client_token = None
    if client_token is not None:
        free |= Q(example__client_token=client_token, example__annotator=worker)
    found = (
        Suggestion.objects.filter(free, pk=pk, worker=worker, round_id=task.current_round_id).first()
        if pk
        else None
    )
    if found is None:
        raise AssistantError(
            "That suggestion is not one of yours in this round, or an example already took it.",
            code="not_yours",
        )
    return found


def claim_suggestion(suggestion: Suggestion, client_token) -> str:
    """Hold ``suggestion`` for the example being stored with ``client_token`` until ``release_claim``, so
    that two examples sent at once with the same suggestion cannot both take it (the second is refused
    while the first is stored; afterwards ``usable_suggestion`` refuses it as used). The same token again
    (a resend of the same example) shares the hold. Returns the hold's key.

    Raises:
        AssistantError: ``busy`` when another example holds it.
    """
    key = f"assistant:taking:{suggestion.pk}"
    holder = str(client_token) if client_token is not None else uuid.uuid4().hex
    if not cache.add(key, holder, timeout=CLAIM_SECONDS) and cache.get(key) != holder:
        raise AssistantError(
            "Another example is taking that suggestion right now; a suggestion goes with one example.",
            code="busy",
        )
    return key


def release_claim(key: str) -> None:
    """End a ``claim_suggestion`` hold."""
    cache.delete(key)


def take_suggestion(suggestion: Suggestion, example: Example, text: str) -> bool:
    """Record that ``example`` (whose first input field is ``text``) took ``suggestion``, with the edit
    distance from the suggestion's text to ``text`` (Levenshtein over code points). Once only: False when
    another example took it first (two tabs)."""
    with transaction.atomic():
        taken = Suggestion.objects.filter(pk=suggestion.pk, example__isnull=True).update(
            example=example, kept_distance=Levenshtein.distance(suggestion.text, text)
        )
    return bool(taken)
