"""The loop as a job: queued after commit, run inline, safe twice, progress and failures recorded."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO
from pathlib import Path
from unittest import mock

import pytest
from django.core.management import call_command
from django.db import transaction
from django.utils import timezone

from cycle.jobs import run_training_job
from cycle.models import TrainingJob
from cycle.training import requests as training_requests
from cycle.training.planning import TargetTrainingError
from cycle.training.requests import request_training
from models_registry.models import RegisteredModel
from models_registry.selectors import target_models_for_round
from tasks.services import ensure_round


def test_queued_only_after_commit(hate_task, hate_round, django_capture_on_commit_callbacks):
    with mock.patch.object(training_requests, "_enqueue") as enqueue:
        with django_capture_on_commit_callbacks(execute=True) as callbacks:
            job = request_training(task=hate_task, rounds=[1])
            assert enqueue.call_count == 0  # not before the commit
        assert len(callbacks) == 1
        enqueue.assert_called_once_with(job.pk)


def test_nothing_queued_when_the_transaction_rolls_back(
    hate_task, hate_round, django_capture_on_commit_callbacks
):
    with mock.patch.object(training_requests, "_enqueue") as enqueue:
        with django_capture_on_commit_callbacks(execute=True) as callbacks:
            with pytest.raises(RuntimeError), transaction.atomic():
                request_training(task=hate_task, rounds=[1])
                raise RuntimeError("the request failed after creating the job")
        assert callbacks == []
        enqueue.assert_not_called()
    assert not TrainingJob.objects.exists()


def test_enqueue_goes_through_django_q(hate_task, hate_round, settings):
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "sync": False}
    with mock.patch("django_q.tasks.async_task") as async_task:
        training_requests._enqueue(42)
    args, kwargs = async_task.call_args
    assert args == ("cycle.jobs.run_training_job", 42)
    assert kwargs["sync"] is False


def test_runs_inline_registers_and_makes_the_target(
    hate_task, round1_training_data, tiny_backbone_dir, owner, django_capture_on_commit_callbacks
):
    round2 = ensure_round(task=hate_task, number=2)
    with django_capture_on_commit_callbacks(execute=True):
        job = request_training(
            task=hate_task,
            rounds=[1],
            target_round=2,
            backbone_path=str(tiny_backbone_dir),
            requested_by=owner,
        )
    job.refresh_from_db()
    assert job.status == TrainingJob.Status.DONE, job.error_message
    assert job.error_message == ""
    assert job.model.name == "minilm-quick-r1"
    assert job.model.status == RegisteredModel.Status.READY
    assert job.model.owner == owner
    assert job.model.card["training"]["rounds"] == [1]
    assert job.dev_accuracy == job.model.card["dev_accuracy"]
    assert 0 <= job.dev_accuracy <= 1
    assert target_models_for_round(round2) == [job.model]
    # Progress: each step of the training was written into the record.
    assert "training on rounds [1]: 20 train, 10 dev examples (quick)" in job.log
    assert job.progress.startswith("registered minilm-quick-r1, dev accuracy")
    assert job.started_at <= job.finished_at
    # The django-q2 task record shows it ran through django-q (inline).
    from django_q.models import Task as QTask

    assert QTask.objects.filter(name=f"training-job-{job.pk}", success=True).exists()


def test_safe_to_run_twice(
    hate_task, round1_training_data, tiny_backbone_dir, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        job = request_training(task=hate_task, rounds=[1], backbone_path=str(tiny_backbone_dir))
    job.refresh_from_db()
    finished = job.finished_at
    with mock.patch("cycle.jobs.train_target_for_rounds") as train:
        assert run_training_job(job.pk) == TrainingJob.Status.DONE
        train.assert_not_called()
    job.refresh_from_db()
    assert job.finished_at == finished
    assert RegisteredModel.objects.count() == 1


def test_a_running_job_is_not_started_again(hate_task, hate_round):
    job = TrainingJob.objects.create(task=hate_task, rounds=[1], status=TrainingJob.Status.RUNNING)
    with mock.patch("cycle.jobs.train_target_for_rounds") as train:
        assert run_training_job(job.pk) == TrainingJob.Status.RUNNING
        train.assert_not_called()
    assert run_training_job(999_999) == "missing"


def test_failure_message_stored(hate_task, hate_round, django_capture_on_commit_callbacks):
    # Round 1 has no validated examples at all.
    with django_capture_on_commit_callbacks(execute=True):
        job = request_training(task=hate_task, rounds=[1])
    job.refresh_from_db()
    assert job.status == TrainingJob.Status.FAILED
    assert job.error_message.startswith("no validated training examples in round(s) [1] of hate-speech")
    assert job.model is None
    assert job.finished_at is not None


def test_unexpected_exception_stored(hate_task, hate_round):
    job = TrainingJob.objects.create(task=hate_task, rounds=[1])
    with mock.patch("cycle.jobs.train_target_for_rounds", side_effect=MemoryError("out of memory")):
        assert run_training_job(job.pk) == TrainingJob.Status.FAILED
    job.refresh_from_db()
    assert job.error_message == "MemoryError: out of memory"


def test_request_checks_rounds_and_recipe(hate_task, hate_round):
    with pytest.raises(TargetTrainingError, match=r"has no round\(s\) \[7\]"):
        request_training(task=hate_task, rounds=[1, 7])
    with pytest.raises(TargetTrainingError, match="unknown recipe"):
        request_training(task=hate_task, rounds=[1], recipe="magic")
    with pytest.raises(TargetTrainingError, match="at least one round"):
        request_training(task=hate_task, rounds=[])
    assert not TrainingJob.objects.exists()


def test_command_queue_flag(hate_task, hate_round, django_capture_on_commit_callbacks):
    out = StringIO()
    with mock.patch.object(training_requests, "_enqueue") as enqueue:
        with django_capture_on_commit_callbacks(execute=True):
            call_command(
                "train_target_model", "--task", "hate-speech", "--rounds", "1", "--queue", stdout=out
            )
    job = TrainingJob.objects.get()
    enqueue.assert_called_once_with(job.pk)
    assert f"Queued training job {job.pk}" in out.getvalue()
    assert job.rounds == [1] and job.recipe == "quick"


def test_request_refuses_taken_and_invalid_names(hate_task, hate_round, settings):
    RegisteredModel.objects.create(task=hate_task, name="minilm-quick-r1-2", path="/nowhere", status="ready")
    RegisteredModel.objects.create(task=hate_task, name="minilm-quick-r1", path="/nowhere", status="failed")
    ensure_round(task=hate_task, number=2)
    with pytest.raises(
        TargetTrainingError,
        match=r"^a model named minilm-quick-r1-2 already exists for task hate-speech; choose another name$",
    ):
        request_training(task=hate_task, rounds=[1], name="minilm-quick-r1-2")
    with pytest.raises(TargetTrainingError, match="a model named minilm-quick-r1 already exists"):
        request_training(task=hate_task, rounds=[1])  # the default name is taken too
    for bad in ("../../evil", "/etc/passwd", "a/b", ".hidden", "😀 model"):
        with pytest.raises(TargetTrainingError, match="invalid model name"):
            request_training(task=hate_task, rounds=[1], name=bad)
    assert not TrainingJob.objects.exists()
    assert not Path(settings.DYNABENCH_MODEL_DIR).exists()


def test_request_refuses_a_name_a_pending_job_will_register(hate_task, hate_round):
    with mock.patch.object(training_requests, "_enqueue"):
        first = request_training(task=hate_task, rounds=[1], name="next")
        with pytest.raises(TargetTrainingError, match=rf"training job #{first.pk} .*next"):
            request_training(task=hate_task, rounds=[1], name="next")
        TrainingJob.objects.filter(pk=first.pk).update(status=TrainingJob.Status.FAILED)
        request_training(task=hate_task, rounds=[1], name="next")  # a failed job does not hold the name
    assert TrainingJob.objects.count() == 2


def _running(task, name, *, seconds_ago, **extra):
    return TrainingJob.objects.create(
        task=task,
        rounds=[1],
        name=name,
        status=TrainingJob.Status.RUNNING,
        started_at=timezone.now() - timedelta(seconds=seconds_ago),
        **extra,
    )


def test_fail_interrupted_training_jobs(hate_task, hate_round, settings):
    task_dir = Path(settings.DYNABENCH_MODEL_DIR) / "hate-speech"
    old = _running(hate_task, "old", seconds_ago=7200)
    recent = _running(hate_task, "recent", seconds_ago=10)
    default_named = _running(hate_task, "", seconds_ago=7200)
    legacy = _running(hate_task, "../evil", seconds_ago=7200)  # queued before names were checked
    queued = TrainingJob.objects.create(task=hate_task, rounds=[1], name="queued")
    done = TrainingJob.objects.create(task=hate_task, rounds=[1], status=TrainingJob.Status.DONE)
    for folder in (
        ".old.training-1a2b3c4d",
        ".recent.training-5e6f7a8b",
        ".minilm-quick-r1.training-0000aaaa",
        "old",  # a registered model of that name stays
        ".oldish.training-99999999",  # another name that merely starts alike stays
    ):
        (task_dir / folder).mkdir(parents=True)
        (task_dir / folder / "config.json").write_text("{}")
    (task_dir.parent / "evil").mkdir()

    assert training_requests.fail_interrupted_training_jobs(older_than_seconds=3600) == 3
    for job in (old, default_named, legacy):
        job.refresh_from_db()
        assert job.status == TrainingJob.Status.FAILED
        assert job.error_message == (
            "interrupted: the job worker stopped before the job finished; run it again"
        )
        assert job.finished_at is not None
    for job, status in ((recent, "running"), (queued, "queued"), (done, "done")):
        job.refresh_from_db()
        assert job.status == status
    assert sorted(p.name for p in task_dir.iterdir()) == [
        ".oldish.training-99999999",
        ".recent.training-5e6f7a8b",
        "old",
    ]
    assert (task_dir.parent / "evil").is_dir()

    # At start-up no worker runs: every running job was interrupted.
    assert training_requests.fail_interrupted_training_jobs() == 1
    recent.refresh_from_db()
    assert recent.status == TrainingJob.Status.FAILED
    assert sorted(p.name for p in task_dir.iterdir()) == [".oldish.training-99999999", "old"]
    assert training_requests.fail_interrupted_training_jobs() == 0


def test_a_live_jobs_work_directory_is_kept(hate_task, hate_round, settings):
    """Two jobs of one name (the old one stuck): the stale one is failed, the live one's files stay."""
    task_dir = Path(settings.DYNABENCH_MODEL_DIR) / "hate-speech"
    stale = _running(hate_task, "same", seconds_ago=7200)
    _running(hate_task, "same", seconds_ago=5)
    (task_dir / ".same.training-12345678").mkdir(parents=True)
    assert training_requests.fail_interrupted_training_jobs(older_than_seconds=3600) == 1
    stale.refresh_from_db()
    assert stale.status == TrainingJob.Status.FAILED
    assert (task_dir / ".same.training-12345678").is_dir()


def test_jobs_stuck_longer_than_the_worker_timeout_are_failed_when_a_new_job_starts(
    hate_task, hate_round, settings
):
    stuck = _running(hate_task, "stuck", seconds_ago=settings.Q_CLUSTER["timeout"] + 60)
    job = TrainingJob.objects.create(task=hate_task, rounds=[1])
    assert run_training_job(job.pk) == TrainingJob.Status.FAILED  # no examples
    stuck.refresh_from_db()
    assert stuck.status == TrainingJob.Status.FAILED
    assert stuck.error_message.startswith("interrupted:")


def test_a_job_whose_queue_entry_was_lost_is_queued_again_by_the_sweep_once_per_interval(
    hate_task, hate_round, django_capture_on_commit_callbacks
):
    """A job queued under a name the code no longer has (before the loop moved to cycle), or lost with
    a broker that kept nothing, stays 'queued': the sweep puts it on the queue again under today's name."""
    from datetime import timedelta

    from django.utils import timezone

    from cycle.jobs import sweep_training_jobs_job
    from cycle.training.requests import REQUEUE_SECONDS

    now = timezone.now()
    lost = TrainingJob.objects.create(
        task=hate_task, rounds=[1], queued_at=now - timedelta(seconds=REQUEUE_SECONDS + 5)
    )
    recent = TrainingJob.objects.create(task=hate_task, rounds=[1], name="recent", queued_at=now)
    with mock.patch.object(training_requests, "enqueue") as enqueue:
        with django_capture_on_commit_callbacks(execute=True):
            assert sweep_training_jobs_job() == {"failed": 0, "requeued": 1}
        enqueue.assert_called_once_with(
            "cycle.jobs.run_training_job", lost.pk, task_name=f"training-job-{lost.pk}"
        )
        # Once per interval: the next sweep leaves it to the queue.
        with django_capture_on_commit_callbacks(execute=True):
            assert sweep_training_jobs_job() == {"failed": 0, "requeued": 0}
        assert enqueue.call_count == 1
    lost.refresh_from_db()
    recent.refresh_from_db()
    assert lost.queued_at > now - timedelta(seconds=5) and recent.status == TrainingJob.Status.QUEUED
    # Run from the queue again, it is claimed once and runs (here it fails: round 1 has no examples).
    assert run_training_job(lost.pk) == TrainingJob.Status.FAILED
    assert run_training_job(lost.pk) == TrainingJob.Status.FAILED
