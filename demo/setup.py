"""Set up the local demo: real data, real targets, two accounts. Safe to run again: it only adds.

The orchestrator: for each task in ``demo.demo_tasks`` (one module per task: hate speech,
sentiment, NLI, ...) it imports the data, trains the round targets and lays out the rounds
(``demo_tasks.base.lay_out_task``), then builds every round's datasets and evaluates every model on
every dataset; last, the demo accounts (owners of every demo task) and the job cluster's recurring jobs
(the same as ``manage.py ensure_schedules``: ``core.job_queue.ensure_registered_schedules``).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction

from core.job_queue import ensure_registered_schedules, release_taken_jobs
from cycle.training.requests import fail_interrupted_training_jobs
from demo.demo_tasks import demo_tasks
from demo.demo_tasks.base import TaskReport, lay_out_task
from demo.demo_tasks.base import model_name as model_name
from leaderboards.jobs import run_evaluation_job
from leaderboards.models import Dataset, Score
from leaderboards.scheduling import (
    EVALUATION_INTERRUPTED,
    fail_interrupted_evaluations,
    pending_evaluations,
    retry_evaluations,
)
from leaderboards.services import build_round_datasets
from tasks.models import Task

PASSWORD_FILE = "demo_password"
#: How long the demo waits for evaluations the job worker is running (its own timeout is one hour).
WAIT_FOR_WORKER_SECONDS = 3600.0
#: How often it checks whether those are done (one small query each time).
POLL_SECONDS = 1.0


@dataclass
class DemoReport:
    """What ``setup_demo`` did; printed by the command. ``tasks`` maps a task slug to its report."""

    tasks: dict[str, TaskReport] = field(default_factory=dict)
    password: str = ""
    password_source: str = ""
    evaluated: int = 0
    evaluation_failures: list[str] = field(default_factory=list)

    @property
    def trained(self) -> list[str]:
        """``slug/model`` of every model trained in this run."""
        return [f"{slug}/{name}" for slug, report in self.tasks.items() for name in report.trained]

    @property
    def reused(self) -> list[str]:
        """``slug/model`` of every model found trained on disk and reused."""
        return [f"{slug}/{name}" for slug, report in self.tasks.items() for name in report.reused]


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


@transaction.atomic
def ensure_demo_users(tasks: Task | Iterable[Task], password: str, *, reset_password: bool) -> None:
    """``demo-owner`` (superuser, owner of every given task) and ``demo-annotator``.

    Passwords are set when the account is new or ``reset_password`` asks for it.
    """
    tasks = [tasks] if isinstance(tasks, Task) else list(tasks)
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
            for task in tasks:
                task.owners.add(user)


def evaluate_demo(
    task: Task,
    report: DemoReport,
    *,
    log: Callable[[str], None] = print,
    wait_seconds: float = WAIT_FOR_WORKER_SECONDS,
) -> None:
    """Build each round's datasets and run every missing evaluation (scoring and standard datasets) inline,
    those on scoring datasets (ranked on the leaderboard) first.

    Evaluations that failed only because their worker was stopped (``EVALUATION_INTERRUPTED``, e.g. the
    demo was stopped mid-evaluation) are run again; genuine failures are left for the owner's retry.
    Evaluations the job worker is running are waited for (polling, at most ``wait_seconds``), so "Demo
    ready." means every leaderboard is filled. A second run finds every pair scored and evaluates nothing.
    """
    for round_ in task.rounds.order_by("number"):
        build_round_datasets(round_, progress=log)
    interrupted = Score.objects.filter(
        dataset__task=task, status=Score.Status.FAILED, error_message=EVALUATION_INTERRUPTED
    ).values_list("pk", flat=True)
    retry_evaluations(list(interrupted), queue=False)
    score_ids = pending_evaluations(task=task)
    # Scoring datasets first (by dataset, then model, as pending_evaluations orders them): the
    # leaderboard is full before the model pages' standard datasets (the dev splits) are evaluated.
    access = dict(Score.objects.filter(pk__in=score_ids).values_list("pk", "dataset__access"))
    score_ids.sort(key=lambda pk: access[pk] != Dataset.Access.SCORING)
    if score_ids:
        log(f"[{task.slug}] Evaluating: {len(score_ids)} (model, dataset) pairs...")
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
    running = Score.objects.filter(dataset__task=task, status=Score.Status.RUNNING)
    deadline = time.monotonic() + wait_seconds
    if running.exists():
        log(f"[{task.slug}] Waiting for {running.count()} evaluation(s) the job worker is running...")
    while running.exists() and time.monotonic() < deadline:
        time.sleep(POLL_SECONDS)


def setup_demo(
    *,
    recipe: str = "quick",
    password: str | None = None,
    tasks: Sequence[str] | None = None,
    log: Callable[[str], None] = print,
    worker_running: bool = False,
    evaluate: bool = True,
    pilot: bool = False,
) -> DemoReport:
    """Set up every demo task (import, train the round targets, lay out the rounds, build the round
    datasets, evaluate every model on every dataset, inline; each pair once: training measures no test
    split, the model page reads the test figures from these evaluations), then the demo accounts and
    schedules.

    Args:
        recipe: ``quick`` (frozen MiniLM + logistic regression, about a minute each) or ``finetune``.
        password: the demo accounts' password; default: generated once and kept in ``var/demo_password``.
        tasks: slugs of the demo tasks to set up (default: all of ``demo.demo_tasks``).
        log: where progress lines go.
        worker_running: a job worker may be running (``demo.sh`` sets up the later tasks in the
            background while the server and worker run): training jobs and evaluations marked running
            are then left alone instead of being marked interrupted.
        evaluate: build the round datasets and run the missing evaluations of each task (default).
            ``False`` (``--skip-evaluations``) stops once the tasks are laid out and their targets
            trained, so that the server can open sooner (``demo.sh``: the hate-speech task is open for
            annotators then; a later run with ``evaluate`` fills its leaderboard). The evaluations
            requested when each target was registered stay queued for a job worker meanwhile.
        pilot: run each task's pilot (``DemoTask.pilot``: simulated people fill the open round so its
            figures show), after its evaluations; ``manage.py setup_demo`` asks for it unless
            ``--no-pilot``. Off by default, so code that sets up a task for its own people starts empty.

    Raises:
        django.core.management.CommandError: when the data folder is missing (from an importer).
        KeyError: for a slug in ``tasks`` that is not a demo task.
    """
    specs = {spec.slug: spec for spec in demo_tasks()}
    chosen = [specs[slug] for slug in tasks] if tasks is not None else list(specs.values())
    report = DemoReport()
    if not worker_running:
        # No job worker runs yet (demo.sh starts it after this command): a job still marked running was
        # cut off by the last stop; so was an evaluation still marked running.
        fail_interrupted_training_jobs()
        fail_interrupted_evaluations()
        release_taken_jobs()
    set_up: list[Task] = []
    for spec in chosen:
        task, report.tasks[spec.slug] = lay_out_task(spec, recipe=recipe, log=log)
        if evaluate:
            evaluate_demo(task, report, log=log)
        set_up.append(task)

    report.password, report.password_source = demo_password(password)
    ensure_demo_users(set_up, report.password, reset_password=bool(password))
    if pilot and evaluate:  # the pilot's owner steps (replay, rating) need the task's owner
        for spec, task in zip(chosen, set_up, strict=True):
            if spec.pilot is not None:
                spec.pilot(task, log)
    # The recurring jobs every app registered, as ``manage.py ensure_schedules`` creates them.
    ensure_registered_schedules()
    return report
