"""Writes for examples: create (with server-side model-wrong), explain, retract, flag, retry predictions.

The target models run OUTSIDE any transaction or row lock: inference takes hundreds of milliseconds
and must not hold database locks. The example and its predictions are then stored in one short
transaction.
"""

from __future__ import annotations

import uuid

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from core import spans
from core.text_rules import (
    check_free_text,
    control_character_message,
    first_control_character,
    has_visible_character,
    no_visible_character_message,
    normalise_newlines,
    too_long_message,
)
from models_registry import serving
from tasks import qualification
from tasks.config import TaskConfig
from tasks.kinds import conversational, labelled, span_answers
from tasks.models import Context, Round, Task

from . import selectors, signals
from .models import Example, Prediction
from .predictions import (
    example_unsure,
    example_verdict,
    model_verdict,
    prediction_label,
    prediction_status,
    run_model,
)

NON_FIELD = "__all__"
MAX_EXPLANATION_LENGTH = 2000
MAX_FLAG_REASON_LENGTH = 2000


class ExampleError(Exception):
    """An example that cannot be written or changed; ``errors`` maps field names to messages.

    Field names are the task config's input and target field names, ``context`` or ``__all__``
    for problems not tied to one field.
    """

    def __init__(self, errors: dict[str, list[str]] | str):
        if isinstance(errors, str):
            errors = {NON_FIELD: [errors]}
        self.errors = errors
        super().__init__("; ".join(f"{k}: {' '.join(v)}" for k, v in errors.items()))


class TokenAlreadyUsed(ExampleError):
    """The form token was already used for an example with other inputs, target or context.

    The new text was not stored; the form needs a fresh token so that sending it again makes a new
    example. ``example`` is the one stored under the token.
    """

    def __init__(self, example: Example, errors: dict[str, list[str]] | None = None):
        self.example = example
        message = (
            f"This form was already sent as example #{example.pk}; your new text was not saved yet "
            "— send it again."
        )
        errors = {k: list(v) for k, v in (errors or {}).items()}
        errors.setdefault(NON_FIELD, []).insert(0, message)
        super().__init__(errors)


def clean_inputs(
    cfg: TaskConfig, inputs: dict, target, *, context: Context | None = None, with_target: bool = True
) -> tuple[dict, object]:
    """Check and normalise an example's input fields and target against the task config.

    Lengths are counted in code points (Python ``len``) after CRLF becomes LF, so an emoji ZWJ sequence
    counts as the number of code points it is made of and a line break as one. A text must have at
    least one visible character (``has_visible_character``) and no control character but LF and tab.

    ``with_target`` False checks the inputs alone (``target`` is returned as given).

    Returns:
        ``(inputs, target)`` normalised.

    Raises:
        ExampleError: with every problem found, keyed by field name.
    """
    errors: dict[str, list[str]] = {}
    if not isinstance(inputs, dict):
        raise ExampleError("The inputs must be a mapping of field names to text.")
    known = {f["name"] for f in cfg.input_fields}
    for name in sorted(set(inputs) - known):
        errors.setdefault(NON_FIELD, []).append(f"Unknown input field {name!r}.")

    cleaned: dict[str, str] = {}
    for spec in cfg.input_fields:
        name = spec["name"]
        label = spec.get("label", name)
        value = inputs.get(name)
        if value is None:
            value = ""
        if not isinstance(value, str):
            errors.setdefault(name, []).append(f"{label} must be text.")
            continue
        value = normalise_newlines(value)
        char = first_control_character(value)
        if char is not None:
            errors.setdefault(name, []).append(control_character_message(label, char))
            cleaned[name] = value
            continue
        if not value.strip():
            if not spec.get("optional", False):
                errors.setdefault(name, []).append(
                    f"{label} is required; write something that is not only spaces."
                )
            cleaned[name] = ""
            continue
        if not has_visible_character(value):
            errors.setdefault(name, []).append(no_visible_character_message(label))
            cleaned[name] = value
            continue
        limit = cfg.max_length_of(spec)
        if len(value) > limit:
            errors.setdefault(name, []).append(too_long_message(label, len(value), limit))
        cleaned[name] = value

    try:
        if with_target:  # False: a draft's text alone (uncertainty mode's live confidence)
            target = clean_target(cfg, target, context=context)
    except ExampleError as exc:
        for name, messages in exc.errors.items():
            errors.setdefault(name, []).extend(messages)
    if errors:
        raise ExampleError(errors)
    return cleaned, target


def clean_target(cfg: TaskConfig, target, *, context: Context | None) -> object:
    """``target`` checked as ``clean_inputs`` checks an example's target: one of the labels, or a span of
    the context's passage (``{"answer", "answer_start"}``, resolved as ``_clean_span`` does). For a
    validator's own target in uncertainty mode (``validation.services``).

    Raises:
        ExampleError: keyed by the target field's name (or ``context``).
    """
    errors: dict[str, list[str]] = {}
    if labelled(cfg):
        if target not in cfg.labels:
            errors.setdefault(cfg.target_field["name"], []).append(f"Choose one of: {', '.join(cfg.labels)}.")
    elif span_answers(cfg):
        target = _clean_span(target, cfg.target_field, context, errors)
    if errors:
        raise ExampleError(errors)
    return target


def _clean_span(target, spec: dict, context: Context | None, errors: dict) -> object:
    """A span target ``{"answer": str, "answer_start": int | None}`` resolved against the context's
    stored (already normalised) passage by ``core.spans.resolve_answer``: with an offset the answer must
    be there (code points), without one the first whole-word occurrence (``core.spans.resolve_answer``) is taken; an answer not in the passage, or
    one that cuts a character in two, is an error on the target field. A bare string is an answer
    without offset. Returns ``{"answer", "answer_start"}``.
    """
    name = spec["name"]
    if context is None:
        errors.setdefault("context", []).append("A span answer needs a context.")
        return target
    if isinstance(target, str):
        target = {"answer": target}
    if not isinstance(target, dict) or not isinstance(target.get("answer"), str):
        errors.setdefault(name, []).append("Select the answer in the passage.")
        return target
    passage = str(context.data.get(spec["context_field"], ""))
    try:
        span = spans.resolve_answer(passage, target["answer"], target.get("answer_start"))
    except spans.SpanError as exc:
        errors.setdefault(name, []).append(str(exc))
        return target
    return span.as_target()


class NotQualifiedToWrite(ExampleError):
    """The task's qualification rules refuse the writer (``tasks.qualification.check_can_contribute``):
    ``code`` is the rule (``blocked``, ``not_allowed``, ``held``, ``tutorial``, ``quiz``, ``daily_cap``,
    ``competition_limit``), ``url`` the page that lifts it (tutorial, quiz) or None. The API answers 403
    with both; pages show the message (or redirect to ``url``)."""

    def __init__(self, refusal: qualification.NotQualified):
        self.code = refusal.code
        self.url = refusal.url
        self.message = refusal.message
        super().__init__(refusal.message)


def _check_can_write(
    annotator,
    task: Task | None = None,
    *,
    source: str = Example.Source.CREATED,
    lock: bool = False,
    facts: qualification.TaskFacts | None = None,
) -> None:
    """The account-wide rule (``User.can_contribute``), then, with ``task``, the task's qualification
    rules (``NotQualifiedToWrite``). Replayed rows (``source=replay``) measure a target, they are no
    one's work: the task's rules do not apply to them. ``lock``: inside the storing transaction, take
    the worker's row lock so two requests at the daily cap cannot both pass. ``facts``: the writer's
    ``qualification.task_facts``, when already read."""
    if annotator is None or not annotator.is_authenticated:
        raise ExampleError("Log in to write examples.")
    if not annotator.can_contribute:
        raise ExampleError("Your account is blocked from writing examples.")
    if task is None or source == Example.Source.REPLAY:
        return
    try:
        qualification.check_can_contribute(task, annotator, qualification.WRITE, lock=lock, facts=facts)
    except qualification.NotQualified as refusal:
        raise NotQualifiedToWrite(refusal) from None


def check_can_write(annotator, task: Task) -> None:
    """The writer rules ``create_example`` applies before the models run (account, then the task's
    qualification rules), for a caller that runs the models without storing (uncertainty mode's live
    confidence, ``annotation.confidence``).

    Raises:
        ExampleError: not logged in or blocked; ``NotQualifiedToWrite`` for the task's rules.
    """
    _check_can_write(annotator, task)


def check_models_read(cfg, models, model_input: dict) -> None:
    """``create_example``'s check that every target model reads the whole text (``ExampleError`` naming
    the field otherwise), for a caller that runs the models without storing."""
    _check_the_models_read_it_all(cfg, models, model_input)


def _check_the_models_read_it_all(cfg, models, model_input: dict) -> None:
    """Refuse a text a target model would read only the beginning of: an ending it never sees cannot be
    what fooled it, so such an example would count as model-fooling without being one.

    Raises:
        ExampleError: keyed by the task's first input field, with the token count and the limit.
    """
    for model in models:
        unread = serving.unread_tokens(model, model_input, cfg.model_input_fields)
        if unread is None:
            continue
        tokens, limit = unread
        together = " with the context" if cfg.context_fields else ""
        raise ExampleError(
            {
                cfg.input_fields[0]["name"]: [
                    f"Too long for the target model: it reads the first {limit:,} word pieces of a text, "
                    f"and this one makes {tokens:,}{together}, so the model would not see its end. Shorten it."
                ]
            }
        )


def _existing(annotator, client_token) -> Example | None:
    if client_token is None:
        return None
    return Example.objects.filter(annotator=annotator, client_token=client_token).first()


def create_example(
    *,
    task: Task,
    annotator,
    inputs: dict,
    target,
    context: Context | None = None,
    client_token: uuid.UUID | str | None = None,
    explanation: str = "",
    time_taken_ms: int | None = None,
    source: str = Example.Source.CREATED,
    metadata: dict | None = None,
) -> tuple[Example, bool]:
    """Store an annotator's example in the task's current round, scored by the round's target models.

    ``model_wrong`` is decided here from the models' outputs and the task's rules; nothing the client
    sends can set it. A model that fails leaves the example stored with ``prediction_status`` failed
    and ``model_wrong`` None, to be completed by ``predictions.retry_failed_predictions``.

    Idempotent per ``(annotator, client_token)``: a resubmission (double click, retried POST, or a
    concurrent duplicate) with the same inputs, target and context returns the example already stored;
    the same token with other ones raises ``TokenAlreadyUsed`` (nothing is stored).

    ``metadata`` (a JSON object the caller checked, e.g. the API's serializer) is stored as given.

    Returns:
        ``(example, created)``.

    Raises:
        ExampleError: a red-teaming task (its examples are conversations and multiple-choice items),
            blocked user, ``NotQualifiedToWrite`` when the task's qualification rules refuse
            the writer (checked before the models run and again under the worker's row lock), no open current round (also re-checked under the round's row lock
            when storing), a context from another round, or invalid inputs / target (keyed by field
            name). ``TokenAlreadyUsed`` for a reused token with other text.
    """
    _check_can_write(annotator)
    if conversational(
        task.cfg
    ):  # its examples are conversations and items (annotation/red_team/), never these
        raise ExampleError(
            "A red-teaming task takes conversations and multiple-choice items, not examples: "
            f"use /api/tasks/{task.slug}/conversations/ or /api/tasks/{task.slug}/choice-items/ (docs/api.md)."
        )
    if client_token is not None:
        try:
            client_token = uuid.UUID(str(client_token))
        except ValueError:
            raise ExampleError("The form token is not valid; reload the page.") from None
    existing = _existing(annotator, client_token)
    if existing is not None:
        return _resubmitted(existing, task.cfg, inputs, target, context), False

    round_ = task.current_round
    if round_ is None or round_.task_id != task.pk:
        raise ExampleError("This task has no current round; it is not collecting examples.")
    if round_.is_closed:
        raise ExampleError(f"Round {round_.number} is closed; it accepts no new examples.")
    if context is not None and context.round_id != round_.pk:
        raise ExampleError({"context": ["This context is not part of the current round."]})
    # Before the models run (no need to make them think for a refused writer); again under the lock below,
    # with the task's facts read once for both.
    facts = qualification.task_facts(task, annotator) if source != Example.Source.REPLAY else None
    _check_can_write(annotator, task, source=source, facts=facts)

    cfg = task.cfg
    clean, target = clean_inputs(cfg, inputs, target, context=context)
    explanation = normalise_newlines(explanation or "")
    problem = check_free_text(explanation, "The explanation", MAX_EXPLANATION_LENGTH)
    if problem:
        raise ExampleError({"explanation": [problem]})
    if time_taken_ms is not None and time_taken_ms < 0:
        time_taken_ms = None

    # Inference outside any transaction: no locks are held while the models think.
    models = selectors.target_models_for_round(round_)
    model_input = Example.model_input_from(clean, context.data if context else None)
    if source == Example.Source.CREATED:
        _check_the_models_read_it_all(cfg, models, model_input)
    outcomes = [run_model(m, model_input) for m in models]

    verdicts = [model_verdict(cfg, target, o.output) for o in outcomes if o.ok]
    any_failed = any(not o.ok for o in outcomes)
    try:
        with transaction.atomic():
            # The round was checked before the models ran, which takes a while; it may have been closed
            # or replaced since. Holding its row lock until commit makes closing it wait for this insert
            # (or this insert see it closed), so no example lands in a round that was already closed.
            is_closed, is_current = _share_lock_round(round_.pk)
            if is_closed or not is_current:
                raise ExampleError(
                    f"Round {round_.number} closed while the model was answering; your example was not saved."
                )
            # Locks the writer's TaskWorker row, then counts: of two requests at the daily cap (or the
            # competition limit) the second counts the first's example once it commits, and is refused.
            _check_can_write(annotator, task, source=source, lock=True, facts=facts)
            example = Example.objects.create(
                round=round_,
                context=context,
                annotator=annotator,
                inputs=clean,
                target=target,
                explanation=explanation,
                model_wrong=example_verdict(cfg, verdicts, any_failed),
                model_unsure=example_unsure(cfg, [o.output for o in outcomes if o.ok], any_failed),
                prediction_status=prediction_status(len(models), any_failed),
                source=source,
                client_token=client_token,
                time_taken_ms=time_taken_ms,
                metadata=metadata or {},
            )
            Prediction.objects.bulk_create(
                [
                    Prediction(
                        example=example,
                        model=o.model,
                        status=Prediction.Status.OK if o.ok else Prediction.Status.FAILED,
                        label=prediction_label(o.output),
                        output=o.output,
                        model_wrong=model_verdict(cfg, target, o.output) if o.ok else None,
                        error=o.error,
                        latency_ms=o.latency_ms,
                        runtime=o.runtime,
                    )
                    for o in outcomes
                ]
            )
            signals.example_created.send(sender=Example, example=example)
    except IntegrityError:
        # Two submissions with the same token raced past the lookup above; the unique constraint
        # (annotator, client_token) let exactly one insert through. Return that one.
        winner = _existing(annotator, client_token)
        if winner is None:
            raise
        return _resubmitted(winner, cfg, clean, target, context), False
    return example, True


def _share_lock_round(round_id: int) -> tuple[bool, bool]:
    """Lock the round's row in share mode until the transaction ends and return ``(is_closed,
    is_current)``: whether it is closed, and whether it is still its task's current round.

    A share lock (PostgreSQL's ``FOR SHARE``) and not ``select_for_update``: closing or replacing a round
    updates its row, which waits for every insert holding the lock (and an insert arriving meanwhile waits
    for the close, then reads the round closed), but inserts do not wait for each other. With an
    exclusive lock every example of a round was stored one after the other, and a crowd's writes queued
    behind whichever request thread held it while it waited for the CPU (docs/serving.md, "Where the
    time went"). Django has no share-lock queryset, hence the SQL. SQLite has no row locks: there the
    transaction is IMMEDIATE (the settings), which already holds the database's one write lock.

    Raises:
        Round.DoesNotExist: the round was deleted.
    """
    round_table = connection.ops.quote_name(Round._meta.db_table)
    task_table = connection.ops.quote_name(Task._meta.db_table)
    lock = f" FOR SHARE OF {round_table}" if connection.vendor == "postgresql" else ""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {round_table}.is_closed, {task_table}.current_round_id = {round_table}.id "  # noqa: S608
            f"FROM {round_table} JOIN {task_table} ON {task_table}.id = {round_table}.task_id "
            f"WHERE {round_table}.id = %s{lock}",
            [round_id],
        )
        row = cursor.fetchone()
    if row is None:
        raise Round.DoesNotExist(f"round {round_id} does not exist")
    return bool(row[0]), bool(row[1])


def _resubmitted(
    existing: Example, cfg: TaskConfig, inputs: dict, target, context: Context | None
) -> Example:
    """The example already stored under a form token, if this submission is the same example again.

    A double click or a retried POST sends the same inputs, target and context: that is the stored
    example. Different ones under the same token (the form was sent, then edited and sent again) are a
    new example the annotator wants; they raise ``TokenAlreadyUsed`` rather than being dropped.
    """
    try:
        clean, target = clean_inputs(cfg, inputs, target, context=context)
    except ExampleError as exc:
        raise TokenAlreadyUsed(existing, exc.errors) from None
    same_context = existing.context_id == (context.pk if context is not None else None)
    if existing.inputs != clean or existing.target != target or not same_context:
        raise TokenAlreadyUsed(existing)
    return existing


def _own(example: Example, user) -> Example:
    """Lock and return the example if ``user`` wrote it; ExampleError otherwise."""
    if not user.is_authenticated or example.annotator_id != user.pk:
        raise ExampleError("Only the author of an example can change it.")
    return Example.objects.select_for_update().get(pk=example.pk)


@transaction.atomic
def add_explanation(*, example: Example, user, explanation: str) -> Example:
    """Set the author's explanation of why the example fools the model (replaces an earlier one).

    The length is counted after CRLF becomes LF, as a browser's ``maxlength`` counts a line break.

    Raises:
        ExampleError: if ``user`` is not the author, the example is retracted, or the explanation is
            too long or has a control character (keyed ``explanation``).
    """
    locked = _own(example, user)
    if locked.is_retracted:
        raise ExampleError("This example is retracted; it can no longer be explained.")
    explanation = normalise_newlines(explanation or "")
    problem = check_free_text(explanation, "The explanation", MAX_EXPLANATION_LENGTH)
    if problem:
        raise ExampleError({"explanation": [problem]})
    locked.explanation = explanation
    locked.save(update_fields=["explanation", "updated_at"])
    return locked


@transaction.atomic
def retract_example(*, example: Example, user, now=None) -> Example:
    """The author withdraws an example: it leaves every count and queue. Idempotent: ``retracted_at``
    keeps the time of the first retraction (``now``, default the current time).

    Raises:
        ExampleError: if ``user`` is not the author, the example's round is a competition (whose
            examples cannot be retracted), or validators have settled it (their verdicts, the round's
            dataset and any pay made for it stand: the author can flag it for the owners instead).
    """
    locked = _own(example, user)
    if locked.round.is_competition:
        raise ExampleError(
            f"Round {locked.round.number} is a competition: examples written in it cannot be retracted."
        )
    if not locked.is_retracted and locked.status != Example.Status.PENDING:
        raise ExampleError(
            f"This example is already settled ({locked.get_status_display().lower()}), so it can no longer "
            "be retracted; flag it for the task owners if something is wrong with it."
        )
    if not locked.is_retracted:
        locked.is_retracted = True
        locked.retracted_at = now or timezone.now()
        locked.save(update_fields=["is_retracted", "retracted_at", "updated_at"])
        signals.example_retracted.send(sender=Example, example=locked)
    return locked


@transaction.atomic
def flag_example(*, example: Example, user, reason: str = "", now=None) -> Example:
    """The author flags their own example for the task owners (e.g. submitted by mistake), at ``now``
    (``flagged_at``; default the current time).

    Once only: a second flag is refused rather than overwriting the reason the owners may already have
    read.

    Raises:
        ExampleError: if ``user`` is not the author, the example is retracted or already flagged, or
            the reason is too long or has a control character (keyed ``reason``).
    """
    locked = _own(example, user)
    if locked.is_retracted:
        raise ExampleError("This example is retracted; it can no longer be flagged.")
    if locked.is_flagged_by_annotator:
        raise ExampleError("This example is already flagged for the task owners.")
    reason = normalise_newlines(reason or "")
    problem = check_free_text(reason, "The reason", MAX_FLAG_REASON_LENGTH)
    if problem:
        raise ExampleError({"reason": [problem]})
    locked.is_flagged_by_annotator = True
    locked.flag_reason = reason
    locked.flagged_at = now or timezone.now()
    locked.save(update_fields=["is_flagged_by_annotator", "flag_reason", "flagged_at", "updated_at"])
    return locked


SETTLED_STATUSES = frozenset(
    {Example.Status.VALIDATED_CORRECT, Example.Status.VALIDATED_INCORRECT, Example.Status.FLAGGED}
)


def settle_example(example_id: int, status: str, *, now=None) -> bool:
    """Move a pending example to a settled status at ``now`` (``settled_at``; default the current time);
    True if this call made the transition.

    For the validation service only (``validation.services.submit_validation``), which calls it inside
    its transaction while holding the example's row lock, and counts a settlement only when this
    returns True. The UPDATE is conditional on ``status = 'pending'`` as well, so even a caller without
    that lock can never settle an example twice or move it from one settled status to another.

    Raises:
        ValueError: if ``status`` is not one of the settled statuses.
    """
    if status not in SETTLED_STATUSES:
        raise ValueError(f"{status!r} is not a settled status")
    now = now or timezone.now()
    updated = Example.objects.filter(pk=example_id, status=Example.Status.PENDING).update(
        status=status, settled_at=now, updated_at=now
    )
    return updated == 1


def overturn_settlement(example_id: int, status: str, *, previous: str, now=None) -> bool:
    """Move a settled example from the settled status ``previous`` to another one, ``status``, at ``now``
    (``settled_at`` becomes the time of the overturning verdict); True if this call made the change.

    For the validation service only (``validation.services.overturn_verdict``, an owner overturning a
    settled example), under the example's row lock. The UPDATE is conditional on ``status = previous``,
    so a stale caller changes nothing.

    Raises:
        ValueError: if ``status`` or ``previous`` is not a settled status, or they are the same.
    """
    if status not in SETTLED_STATUSES or previous not in SETTLED_STATUSES or status == previous:
        raise ValueError(f"cannot overturn {previous!r} to {status!r}")
    now = now or timezone.now()
    updated = Example.objects.filter(pk=example_id, status=previous).update(
        status=status, settled_at=now, updated_at=now
    )
    return updated == 1
