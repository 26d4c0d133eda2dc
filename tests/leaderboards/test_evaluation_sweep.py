"""Evaluations cut off with their worker run again: a running evaluation beats a heartbeat, and the
scheduled sweep queues again a running Score whose heartbeat stopped (at most MAX_EVALUATION_ATTEMPTS
claims) and a pending Score nobody took (leaderboards/scheduling.py, "Heartbeat and sweep"). A Score left
"running" past the worker timeout (or any, at start-up) is marked failed as interrupted, by the evaluate
command and by the next job, and retried to success; a recent one is left to its worker."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from leaderboards import scheduling
from leaderboards.jobs import run_evaluation_job
from leaderboards.models import Score
from leaderboards.scheduling import (
    EVALUATION_GAVE_UP,
    EVALUATION_INTERRUPTED,
    MAX_EVALUATION_ATTEMPTS,
    REQUEUE_PENDING_SECONDS,
    STALE_SECONDS,
    fail_interrupted_evaluations,
    heartbeat,
    heartbeat_seconds,
    pending_evaluations,
    retry_evaluations,
    sweep_evaluations,
)
from tests.factories.leaderboards import make_toy_dataset


@pytest.fixture
def queued(monkeypatch):
    seen: list[int] = []
    monkeypatch.setattr(scheduling, "_enqueue_evaluation", seen.append)
    return seen


@pytest.fixture
def score_at(hate_task, make_model):
    dataset = make_toy_dataset(hate_task, "sweep-set")

    def make(status: str, *, seconds_ago: float, attempts: int = 1, name: str = "m") -> Score:
        # Committed (transactional) tests evaluate on save already: take that row if it is there.
        score, _ = Score.objects.update_or_create(
            model=make_model(name),
            dataset=dataset,
            defaults={"status": status, "perf": None, "attempts": attempts},
        )
        Score.objects.filter(pk=score.pk).update(updated_at=timezone.now() - timedelta(seconds=seconds_ago))
        return score

    return make


def test_a_running_score_whose_heartbeat_stopped_is_queued_again(
    django_capture_on_commit_callbacks, score_at, queued
):
    cut_off = score_at("running", seconds_ago=STALE_SECONDS + 5, attempts=1)
    alive = score_at("running", seconds_ago=STALE_SECONDS - 30, attempts=1, name="alive")
    with django_capture_on_commit_callbacks(execute=True):
        counts = sweep_evaluations()
    assert counts == {"rerun": 1, "gave_up": 0, "requeued": 0}
    assert queued == [cut_off.pk]
    cut_off.refresh_from_db()
    alive.refresh_from_db()
    assert (cut_off.status, alive.status) == ("pending", "running")


def test_after_the_last_attempt_the_sweep_gives_up(django_capture_on_commit_callbacks, score_at, queued):
    score = score_at("running", seconds_ago=STALE_SECONDS + 5, attempts=MAX_EVALUATION_ATTEMPTS)
    with django_capture_on_commit_callbacks(execute=True):
        assert sweep_evaluations() == {"rerun": 0, "gave_up": 1, "requeued": 0}
    score.refresh_from_db()
    assert (score.status, score.error_message) == ("failed", EVALUATION_GAVE_UP)
    assert queued == []


def test_a_forgotten_pending_score_is_queued_again_once_per_period(
    django_capture_on_commit_callbacks, score_at, queued
):
    forgotten = score_at("pending", seconds_ago=REQUEUE_PENDING_SECONDS + 1, attempts=0)
    score_at("pending", seconds_ago=10, attempts=0, name="fresh")
    score_at("done", seconds_ago=REQUEUE_PENDING_SECONDS * 3, attempts=1, name="finished")
    with django_capture_on_commit_callbacks(execute=True):
        assert sweep_evaluations() == {"rerun": 0, "gave_up": 0, "requeued": 1}
        assert sweep_evaluations() == {"rerun": 0, "gave_up": 0, "requeued": 0}  # touched: not again
    assert queued == [forgotten.pk]


def test_each_claim_counts_an_attempt(hate_task, tiny_registered_model):
    dataset = make_toy_dataset(hate_task, "attempts-set")
    [score_id] = scheduling.request_evaluations(model=tiny_registered_model, dataset=dataset, queue=False)
    assert Score.objects.get(pk=score_id).attempts == 0
    assert run_evaluation_job(score_id) == "done"
    assert Score.objects.get(pk=score_id).attempts == 1
    Score.objects.filter(pk=score_id).update(status="pending")
    assert run_evaluation_job(score_id) == "done"
    assert Score.objects.get(pk=score_id).attempts == 2
    Score.objects.filter(pk=score_id).update(status="running")
    assert run_evaluation_job(score_id) == "running"  # not claimed: no attempt counted
    assert Score.objects.get(pk=score_id).attempts == 2


@pytest.mark.django_db(transaction=True)
def test_heartbeat_moves_updated_at_while_the_block_runs(score_at):
    score = score_at("running", seconds_ago=3600)
    before = Score.objects.get(pk=score.pk).updated_at
    with heartbeat(score.pk, every_seconds=0.05):
        time.sleep(0.4)
    during = Score.objects.get(pk=score.pk).updated_at
    assert during > before + timedelta(seconds=3000)
    time.sleep(0.2)
    assert Score.objects.get(pk=score.pk).updated_at == during  # stopped with the block


def test_the_periods_come_from_the_settings(settings):
    assert heartbeat_seconds() == STALE_SECONDS / 4 == 30
    settings.DYNABENCH_EVALUATION_STALE_SECONDS = 20
    assert heartbeat_seconds() == 5


def _scores(model, datasets):
    return [Score.objects.create(model=model, dataset=d) for d in datasets]


def _running_since(score, seconds_ago):
    Score.objects.filter(pk=score.pk).update(
        status=Score.Status.RUNNING, updated_at=timezone.now() - timedelta(seconds=seconds_ago)
    )


def test_fail_interrupted_evaluations(hate_task, tiny_registered_model, three_datasets):
    old, recent, done = _scores(tiny_registered_model, three_datasets.values())
    _running_since(old, 7200)
    _running_since(recent, 10)
    Score.objects.filter(pk=done.pk).update(status=Score.Status.DONE, perf=0.5)

    assert fail_interrupted_evaluations(older_than_seconds=3600) == 1
    statuses = dict(Score.objects.values_list("pk", "status"))
    assert statuses == {old.pk: "failed", recent.pk: "running", done.pk: "done"}
    old.refresh_from_db()
    assert old.error_message == EVALUATION_INTERRUPTED
    assert EVALUATION_INTERRUPTED.startswith("interrupted")

    # At start-up (no worker runs) every running Score was interrupted.
    assert fail_interrupted_evaluations() == 1
    assert fail_interrupted_evaluations() == 0
    assert dict(Score.objects.values_list("pk", "status")) == {
        old.pk: "failed",
        recent.pk: "failed",
        done.pk: "done",
    }
    assert Score.objects.get(pk=done.pk).perf == 0.5


def test_an_interrupted_evaluation_is_retried_and_then_succeeds(
    hate_task, tiny_registered_model, toy_dataset
):
    [score] = _scores(tiny_registered_model, [toy_dataset])
    _running_since(score, 7200)  # the worker was killed an hour ago, past Q_CLUSTER["timeout"] = 3600
    # The admin's retry action first turns the stale Score into a failed one, then retries it.
    assert retry_evaluations([score.pk], queue=False) == [score.pk]
    score.refresh_from_db()
    assert score.status == Score.Status.PENDING and score.error_message == EVALUATION_INTERRUPTED
    assert run_evaluation_job(score.pk) == Score.Status.DONE
    score.refresh_from_db()
    assert score.error_message == "" and score.metrics["n"] == 20


def test_evaluate_command_marks_stale_ones_failed_and_retries_them(
    hate_task, tiny_registered_model, toy_dataset, capsys
):
    [stale] = _scores(tiny_registered_model, [toy_dataset])
    _running_since(stale, 7200)
    call_command("evaluate")
    assert "Nothing to evaluate" in capsys.readouterr().out
    stale.refresh_from_db()
    assert stale.status == Score.Status.FAILED and stale.error_message == EVALUATION_INTERRUPTED
    call_command("evaluate", "--retry-failed")
    assert "1 done" in capsys.readouterr().out
    assert Score.objects.get(pk=stale.pk).status == Score.Status.DONE


def test_a_recent_running_evaluation_is_left_to_its_worker(hate_task, tiny_registered_model, toy_dataset):
    [live] = _scores(tiny_registered_model, [toy_dataset])
    _running_since(live, 60)
    assert pending_evaluations(retry_failed=True) == []
    assert run_evaluation_job(live.pk) == Score.Status.RUNNING  # not claimed twice
    assert Score.objects.get(pk=live.pk).status == Score.Status.RUNNING


def test_a_job_running_after_the_timeout_sweeps_others(
    hate_task, tiny_registered_model, three_datasets, settings
):
    stale, pending, _ = _scores(tiny_registered_model, three_datasets.values())
    _running_since(stale, 7200)
    assert run_evaluation_job(pending.pk) == Score.Status.DONE
    assert Score.objects.get(pk=stale.pk).status == Score.Status.FAILED
    # Without a worker timeout there is no safe bound: nothing is swept by the job.
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "timeout": None}
    _running_since(stale, 7200)
    Score.objects.filter(pk=pending.pk).update(status=Score.Status.PENDING)
    assert run_evaluation_job(pending.pk) == Score.Status.DONE
    assert Score.objects.get(pk=stale.pk).status == Score.Status.RUNNING
