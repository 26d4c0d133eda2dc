"""Writes of judges: make a registered generative model a task's judge, and run it (docs/benchmarking.md,
"Judges").

    judge = create_judge(task=task, model=model, name="SmolLM2 judge")   # the default prompt template
    run_judge(judge=judge, user=owner)   # queues jobs.run_judge_job: a verdict per output, resumable

A judge's verdicts are ``JudgeVerdict`` rows beside people's; nothing here or in the job writes an
example's status, ``model_wrong`` or validations.
"""

from __future__ import annotations

import math
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.utils import timezone

from core.job_queue import enqueue, worker_timeout_seconds
from core.text_rules import lone_surrogate_path, model_text_problem, normalise_newlines
from generative_bench.kinds import benchmarked
from models_registry.models import RegisteredModel
from tasks.models import Task

from ..models import Judge
from . import prompts

#: The generative sources: a model on this server or on an OpenAI-compatible chat server.
GENERATIVE_SOURCES = (RegisteredModel.Source.LOCAL_DIR, RegisteredModel.Source.CHAT_ENDPOINT)
#: A run queued or running longer than this (when the job cluster sets no timeout) is taken as lost.
DEFAULT_STALE_SECONDS = 3600
MAX_NAME_LENGTH = 200


class JudgeError(Exception):
    """A judge the rules refuse; ``code`` names the rule, the message says it to a person."""

    def __init__(self, message: str, code: str):
        super().__init__(message)
        self.code = code


def _check_model(task: Task, model: RegisteredModel) -> None:
    if model.task_id != task.pk:
        raise JudgeError(f"{model.name} is a model of another task.", code="other_task")
    if model.source not in GENERATIVE_SOURCES:
        raise JudgeError(f"{model.name} is not a generative model.", code="not_generative")
    if model.status != RegisteredModel.Status.READY:
        raise JudgeError(
            f"{model.name} is not ready ({model.get_status_display().lower()}); wait for its check.",
            code="not_ready",
        )


def _clean_name(name) -> str:
    if not isinstance(name, str) or lone_surrogate_path(name) is not None:
        raise JudgeError("Give the judge a name.", code="bad_name")
    name = normalise_newlines(name).strip()
    problem = (
        model_text_problem(name, "The judge's name", MAX_NAME_LENGTH) if name else "Give the judge a name."
    )
    if problem:
        raise JudgeError(problem, code="bad_name")
    return name


def clean_floor(value) -> float:
    """The agreement floor as a float in [-1, 1] (Cohen's kappa's range).

    Raises:
        JudgeError: ``bad_floor``, not a number in that range.
    """
    try:
        floor = float(value)
    except (TypeError, ValueError):
        floor = math.nan
    if isinstance(value, bool) or not -1.0 <= floor <= 1.0:
        raise JudgeError("The agreement floor is a kappa between -1 and 1, e.g. 0.4.", code="bad_floor")
    return floor


def clean_template(template) -> str:
    """The prompt template checked (``prompts.check_template``); the default one for None or blank.

    Raises:
        JudgeError: ``bad_template``, each problem named.
    """
    if template is None or (isinstance(template, str) and not template.strip()):
        return prompts.DEFAULT_TEMPLATE
    try:
        return prompts.check_template(template)
    except prompts.TemplateError as exc:
        raise JudgeError(str(exc), code="bad_template") from None


def clean_judge(
    *, task: Task, model: RegisteredModel, name, prompt_template=None, agreement_floor=0.4
) -> dict:
    """A judge's fields checked (``create_judge``'s rules, the admin form's too), as
    ``{"name", "prompt_template", "agreement_floor"}`` ready to store.

    Raises:
        JudgeError: as ``create_judge``, except ``name_taken``.
    """
    if not benchmarked(task.cfg):
        raise JudgeError(
            "Judges answer a red-teaming task's rubric; this task has none.", code="not_red_team"
        )
    _check_model(task, model)
    return {
        "name": _clean_name(name),
        "prompt_template": clean_template(prompt_template),
        "agreement_floor": clean_floor(agreement_floor),
    }


def create_judge(
    *,
    task: Task,
    model: RegisteredModel,
    name: str,
    prompt_template: str | None = None,
    agreement_floor: float = 0.4,
) -> Judge:
    """Make ``model`` a judge of the red-teaming ``task``, named ``name``, with ``prompt_template``
    (``prompts.DEFAULT_TEMPLATE`` when None or blank) and ``agreement_floor`` (the pooled kappa below
    which it is shown as not trusted). It judges nothing until ``run_judge``.

    Raises:
        JudgeError: ``not_red_team`` (a task without a rubric), ``other_task``, ``not_generative`` or
            ``not_ready`` (the model), ``bad_name``, ``bad_floor``, ``bad_template`` (each problem
            of the template named), ``name_taken`` (another judge of the task has the name). Nothing is
            stored then.
    """
    fields = clean_judge(
        task=task, model=model, name=name, prompt_template=prompt_template, agreement_floor=agreement_floor
    )
    if Judge.objects.filter(task=task, name=fields["name"]).exists():
        raise JudgeError(f"This task already has a judge named {fields['name']!r}.", code="name_taken")
    name = fields["name"]
    try:
        with transaction.atomic():
            return Judge.objects.create(task=task, model=model, **fields)
    except IntegrityError:  # the same name saved by a concurrent request since the check above
        raise JudgeError(f"This task already has a judge named {name!r}.", code="name_taken") from None


def _is_stale(judge: Judge) -> bool:
    """True when a queued or running run has not moved for longer than a job may run (its worker died,
    or the broker lost it): it may then be asked for again."""
    seconds = worker_timeout_seconds() or DEFAULT_STALE_SECONDS
    return judge.updated_at < timezone.now() - timedelta(seconds=seconds)


def run_judge(*, judge: Judge, user=None, queue: bool = True) -> Judge:
    """Queue ``jobs.run_judge_job`` for ``judge`` (once the transaction commits): it judges every output
    of the task it has no readable verdict on yet (``jobs.run_judge_job``). ``user``, when given, must
    own the task (a job run from code passes None). With ``queue`` False the judge is marked queued but
    no job is sent: the caller runs ``run_judge_job`` itself (the demo's set-up, inline).

    Returns:
        The judge, ``status`` ``queued``.

    Raises:
        JudgeError: ``not_owner`` (``user`` does not own the task), ``inactive`` (the judge is switched
            off), ``not_ready`` (its model is not ready), ``busy`` (a run is queued or running and not
            stale: asked twice, it runs once).
    """
    if user is not None and not judge.task.is_owner(user):
        raise JudgeError("Only the task's owners may run its judges.", code="not_owner")
    with transaction.atomic():
        locked = Judge.objects.select_for_update().select_related("model", "task").get(pk=judge.pk)
        if not locked.is_active:
            raise JudgeError("This judge is switched off; switch it on to run it.", code="inactive")
        if locked.model.status != RegisteredModel.Status.READY:
            raise JudgeError(f"The judge's model {locked.model.name} is not ready.", code="not_ready")
        if locked.status in ("queued", "running") and not _is_stale(locked):
            raise JudgeError("This judge is already running; wait for it to finish.", code="busy")
        locked.status, locked.progress = "queued", "Queued."
        locked.save(update_fields=["status", "progress", "updated_at"])
        judge_id = locked.pk
        if queue:
            transaction.on_commit(
                lambda: enqueue(
                    "generative_bench.jobs.run_judge_job", judge_id, task_name=f"judge-{judge_id}"
                )
            )
    judge.status, judge.progress = locked.status, locked.progress
    return locked
