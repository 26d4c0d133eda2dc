"""Set up the local demo: real data, real targets, two accounts. Safe to run again: it only adds.

Rounds of the hate-speech task in the demo (HatemojiBuild's rounds 5-7 are our rounds 1-3):

    round  target trained on                       state
    1      round 1's own training split (marked)   closed
    2      round 1                                 closed
    3      rounds 1-2                              closed
    4      rounds 1-3                              open, current: annotators write here
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import transaction

from leaderboards.jobs import (
    fail_interrupted_evaluations,
    fail_interrupted_training_jobs,
    pending_evaluations,
    run_evaluation_job,
)
from leaderboards.models import Score
from leaderboards.services import build_round_datasets
from leaderboards.services_training import train_target_for_rounds
from models_registry.models import RegisteredModel, RoundTarget
from models_registry.services import set_round_targets
from tasks.models import Task
from tasks.services import close_round, ensure_builtin_task, ensure_round, set_current_round

TASK_SLUG = "hate-speech"
OPEN_ROUND = 4
# target round -> the rounds whose training split trains its target
TARGET_TRAINING_ROUNDS: dict[int, tuple[int, ...]] = {1: (1,), 2: (1,), 3: (1, 2), 4: (1, 2, 3)}
PASSWORD_FILE = "demo_password"
RETRY_SCHEDULE = "retry failed predictions"


@dataclass
class DemoReport:
    """What ``setup_demo`` did; printed by the command."""

    models: dict[int, str] = field(default_factory=dict)
    trained: list[str] = field(default_factory=list)
    reused: list[str] = field(default_factory=list)
    password: str = ""
    password_source: str = ""
    evaluated: int = 0
    evaluation_failures: list[str] = field(default_factory=list)


def model_name(training_rounds: tuple[int, ...], recipe: str) -> str:
    """The demo's name for a target: ``minilm-quick-r1-2`` is the quick recipe on rounds 1 and 2."""
    return f"minilm-{recipe}-r" + "-".join(str(r) for r in training_rounds)


def demo_password(password: str | None) -> tuple[str, str]:
    """The demo password and where it came from.

    ``DEMO_PASSWORD`` (``password``) wins and is remembered in ``var/demo_password``, so later runs
    without it print the password that works; else the remembered one; else a new one, remembered.
    """
    path = Path(settings.VAR_DIR) / PASSWORD_FILE
    if password:
        _remember(path, password)
        return password, f"from DEMO_PASSWORD, remembered in {path}"
    if path.exists():
        return path.read_text(encoding="utf-8").strip(), (
            f"remembered in {path}; a password changed in the admin since then stands instead"
        )
    generated = secrets.token_urlsafe(12)
    _remember(path, generated)
    return generated, f"generated now, remembered in {path}"


def _remember(path: Path, password: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(mode=0o600)
    path.write_text(password, encoding="utf-8")


def ensure_retry_schedule() -> None:
    """Every 2 minutes the job cluster scores examples whose model failed (``retry_predictions``)."""
    from django_q.models import Schedule

    Schedule.objects.update_or_create(
        name=RETRY_SCHEDULE,
        defaults={
            "func": "annotation.jobs.retry_failed_predictions_job",
            "schedule_type": Schedule.MINUTES,
            "minutes": 2,
            "repeats": -1,
        },
    )


@transaction.atomic
def ensure_demo_users(task: Task, password: str, *, reset_password: bool) -> None:
    """``demo-owner`` (superuser, owner of the task) and ``demo-annotator``. Passwords set when new or asked."""
    User = get_user_model()
    for username, is_owner in (("demo-owner", True), ("demo-annotator", False)):
        user, created = User.objects.get_or_create(
            username=username,
            defaults={"email": f"{username}@example.org", "is_staff": is_owner, "is_superuser": is_owner},
        )
        if created or reset_password:
            user.set_password(password)
            user.save(update_fields=["password"])
        if is_owner:
            task.owners.add(user)


def evaluate_demo(task: Task, report: DemoReport, *, log: Callable[[str], None] = print) -> None:
    """Build each round's datasets and run every missing evaluation (scoring and standard datasets) inline.

    A second run finds every (model, dataset) pair scored and evaluates nothing.
    """
    for round_ in task.rounds.order_by("number"):
        build_round_datasets(round_, progress=log)
    score_ids = pending_evaluations(task=task)
    if score_ids:
        log(f"Evaluating: {len(score_ids)} (model, dataset) pairs...")
    for n, score_id in enumerate(score_ids, start=1):
        score = Score.objects.select_related("model", "dataset").get(pk=score_id)
        status = run_evaluation_job(score_id)
        report.evaluated += 1
        score.refresh_from_db()
        if status == Score.Status.FAILED:
            report.evaluation_failures.append(
                f"{score.model.name} on {score.dataset.slug}: {score.error_message}"
            )
        figures = f"perf {score.perf:.3f}" if score.perf is not None else status
        log(f"  [{n}/{len(score_ids)}] {score.model.name} on {score.dataset.slug}: {figures}")


def _target_model(
    task: Task,
    training_rounds: tuple[int, ...],
    recipe: str,
    *,
    target_round: int,
    report: DemoReport,
    log: Callable[[str], None],
) -> RegisteredModel:
    """The demo's model trained on ``training_rounds``: reused when ready on disk, else (re)trained."""
    name = model_name(training_rounds, recipe)
    existing = RegisteredModel.objects.filter(task=task, name=name).first()
    if existing and existing.status == RegisteredModel.Status.READY and Path(existing.path).is_dir():
        report.reused.append(name)
        return existing
    log(f"Training {name} on rounds {list(training_rounds)} ({recipe} recipe)...")
    model = train_target_for_rounds(
        task=task,
        rounds=list(training_rounds),
        recipe=recipe,
        name=name,
        target_round=target_round,
        progress=log,
        # Only this demo model's own name is replaced: its row exists but its weights are gone.
        replace=True,
    )
    report.trained.append(name)
    return model


def setup_demo(
    *, recipe: str = "quick", password: str | None = None, log: Callable[[str], None] = print
) -> DemoReport:
    """Import the data, train the round targets, open round 4, build the round datasets, evaluate every
    model on every dataset (inline), create the demo accounts and schedules.

    Args:
        recipe: ``quick`` (frozen MiniLM + logistic regression, about a minute each) or ``finetune``.
        password: the demo accounts' password; default: generated once and kept in ``var/demo_password``.
        log: where progress lines go.

    Raises:
        django.core.management.CommandError: when the data folder is missing (from ``import_hate_data``).
    """
    report = DemoReport()
    call_command("import_hate_data")
    task = ensure_builtin_task(TASK_SLUG)
    # No job worker runs yet (demo.sh starts it after this command): a job still marked running was
    # cut off by the last stop; so was an evaluation still marked running.
    fail_interrupted_training_jobs()
    fail_interrupted_evaluations()
    # The round lifecycle is laid out once. After that it is the owner's: they may close round 4,
    # start round 5 or change targets in the admin, and a later run must leave that as it is.
    first_run = task.current_round_id is None

    trained: dict[tuple[int, ...], RegisteredModel] = {}
    for round_number, training_rounds in TARGET_TRAINING_ROUNDS.items():
        round_ = ensure_round(task=task, number=round_number)
        if training_rounds not in trained:
            trained[training_rounds] = _target_model(
                task, training_rounds, recipe, target_round=round_number, report=report, log=log
            )
        model = trained[training_rounds]
        if not RoundTarget.objects.filter(round=round_).exists():
            set_round_targets(round=round_, models=[model])
        report.models[round_number] = ", ".join(
            RoundTarget.objects.filter(round=round_).values_list("model__name", flat=True)
        )
        if first_run and round_number < OPEN_ROUND:
            close_round(round_=round_)
    if first_run:
        set_current_round(task=task, round_=ensure_round(task=task, number=OPEN_ROUND))
    evaluate_demo(task, report, log=log)

    report.password, report.password_source = demo_password(password)
    ensure_demo_users(task, report.password, reset_password=bool(password))
    ensure_retry_schedule()
    return report
