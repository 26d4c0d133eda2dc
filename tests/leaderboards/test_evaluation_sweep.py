"""Evaluations cut off with their worker run again: a running evaluation beats a heartbeat, and the
scheduled sweep queues again a running Score whose heartbeat stopped (at most MAX_EVALUATION_ATTEMPTS
claims) and a pending Score nobody took (leaderboards/scheduling.py, "Heartbeat and sweep")."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from leaderboards import scheduling
from leaderboards.jobs import run_evaluation_job
from leaderboards.models import Score
from leaderboards.scheduling import (
    EVALUATION_GAVE_UP,
    MAX_EVALUATION_ATTEMPTS,
    REQUEUE_PENDING_SECONDS,
    STALE_SECONDS,
    heartbeat,
    heartbeat_seconds,
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
