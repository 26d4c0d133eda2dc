"""Writes for a round's target models: choose them (one model, or several for an ensemble) and open a
task's next round with them.

Opening a round belongs here, not in ``tasks``: it writes the registry's ``RoundTarget`` rows along
with the task's round and contexts, in one transaction (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import IO

from django.db import transaction

from core.job_queue import enqueue
from models_registry.models import RegisteredModel, RoundTarget
from models_registry.services import ModelRegistryError
from tasks.context_files import format_from_name
from tasks.models import Round, Task
from tasks.selectors import next_round_number
from tasks.services import (
    ContextLoadReport,
    TaskError,
    close_round,
    load_contexts,
    set_current_round,
)


@transaction.atomic
def set_round_targets(*, round: Round, models: Sequence[RegisteredModel]) -> list[RoundTarget]:
    """Make ``models`` the round's target models, in this order (position 0, 1, ...), replacing the old set.

    Once committed, a job checks which of the round's contexts leave the new targets room for the input
    (``context_room.check_context_room``).

    Raises:
        ModelRegistryError: a model of another task, a model that is not ready, or the same model twice.
    """
    ids = [m.pk for m in models]
    if len(set(ids)) != len(ids):
        raise ModelRegistryError("a model can be a round's target only once")
    for model in models:
        if model.task_id != round.task_id:
            raise ModelRegistryError(f"model {model.name} belongs to another task than {round}")
        if model.status != RegisteredModel.Status.READY:
            why = f": {model.error_message}" if model.error_message else ""
            raise ModelRegistryError(f"model {model.name} is not ready ({model.status}){why}")
    # Lock the round so two concurrent calls do not interleave their delete and insert. Only the round's
    # row (of=self): Round's ordering joins its task, whose row a plain FOR UPDATE would lock too.
    Round.objects.select_for_update(of=("self",)).filter(pk=round.pk).first()
    RoundTarget.objects.filter(round=round).exclude(model_id__in=ids).delete()
    targets = []
    for position, model in enumerate(models):
        target, _ = RoundTarget.objects.update_or_create(
            round=round, model=model, defaults={"position": position}
        )
        targets.append(target)
    # The new targets may read less (or more) of a context with its input: check which contexts leave them
    # room, once the round and its contexts are committed (with start_next_round, after its contexts load).
    round_id = round.pk
    transaction.on_commit(
        lambda: enqueue(
            "models_registry.jobs.check_context_room_job", round_id, task_name=f"context-room-{round_id}"
        )
    )
    return targets


@transaction.atomic
def add_round_target(*, round: Round, model: RegisteredModel) -> RoundTarget:
    """Add ``model`` as the round's last target (no-op if it already is one); see ``set_round_targets``."""
    current = [t.model for t in RoundTarget.objects.filter(round=round).select_related("model")]
    if model.pk in {m.pk for m in current}:
        return RoundTarget.objects.get(round=round, model=model)
    set_round_targets(round=round, models=[*current, model])
    return RoundTarget.objects.get(round=round, model=model)


@transaction.atomic
def start_next_round(
    *,
    task: Task,
    description: str,
    models: Sequence,
    contexts_file: IO | None = None,
    contexts_format: str | None = None,
    expected_number: int | None = None,
) -> tuple[Round, ContextLoadReport]:
    """Open round N+1 of ``task`` with its target model(s) and contexts, and make it the current round.

    In one transaction: create the round (number = highest existing + 1), set its targets
    (``set_round_targets``, in the given order; several models form an
    ensemble), load the contexts file if any (``load_contexts``), close the previous current round and
    make the new one current. Any error undoes all of it.

    Args:
        task: the task.
        description: shown with the round.
        models: one or more ready ``RegisteredModel`` of this task.
        contexts_file: optional JSONL or CSV file object (see ``load_contexts``).
        contexts_format: ``"jsonl"`` or ``"csv"``; taken from ``contexts_file.name`` when omitted.
        expected_number: the number the caller means to start (the form's, as served); when another
            round was started meanwhile, nothing is started.

    Returns:
        ``(round, report)``; the report is empty when no file was given.

    Raises:
        TaskError: no model given, a model of another task or not ready, or ``expected_number`` is not
            the next round's number.
        ContextFileError: the contexts file cannot be read as a whole.
    """
    if not models:
        raise TaskError("Choose at least one target model for the new round.")
    # Lock the task: two owners starting a round at once get rounds N+1 and N+2, not a clash. A no-key
    # lock (the task's key does not change): rows that reference the task (a writer's first TaskWorker
    # row, inside a write that holds the round's lock this start waits for) can still be inserted meanwhile,
    # so a start and a write never deadlock.
    locked = Task.objects.select_for_update(no_key=True).get(pk=task.pk)
    number = next_round_number(locked)
    if expected_number is not None and expected_number != number:
        raise TaskError(
            f"round {expected_number} has already been started; reload the page to start round {number}"
        )
    round_ = Round.objects.create(task=locked, number=number, description=description.strip())
    try:
        set_round_targets(round=round_, models=list(models))
    except ModelRegistryError as exc:
        raise TaskError(f"Target models: {exc}.") from exc
    report = ContextLoadReport()
    if contexts_file is not None:
        fmt = contexts_format or format_from_name(getattr(contexts_file, "name", "") or "")
        report = load_contexts(round_=round_, fileobj=contexts_file, fmt=fmt)
    previous = locked.current_round
    if previous is not None and previous.pk != round_.pk:
        close_round(round_=previous)
    set_current_round(task=locked, round_=round_)
    task.current_round = round_
    return round_, report
