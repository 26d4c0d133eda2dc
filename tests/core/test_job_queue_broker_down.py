"""A broker that cannot be reached (Redis down) does not fail the request that asked for a job: the
rows it stored stay, the job's row stays pending, and the sweep queues it again later."""

from __future__ import annotations

import logging

import pytest
import redis

from core.job_queue import enqueue
from leaderboards.models import Score
from leaderboards.scheduling import request_evaluations
from tests.factories.leaderboards import make_toy_dataset


@pytest.fixture
def broker_down(monkeypatch):
    def refuse(*args, **kwargs):
        raise redis.ConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr("django_q.tasks.async_task", refuse)


def test_enqueue_reports_an_unreachable_broker_instead_of_raising(broker_down, caplog):
    with caplog.at_level(logging.ERROR, logger="core.job_queue"):
        assert enqueue("leaderboards.jobs.run_evaluation_job", 1, task_name="evaluation-1") is False
    assert "could not queue evaluation-1" in caplog.text


def test_enqueue_returns_true_when_queued(monkeypatch):
    calls = []
    monkeypatch.setattr("django_q.tasks.async_task", lambda *a, **k: calls.append((a, k)))
    assert enqueue("x.y", 7, task_name="t") is True
    assert calls[0][0] == ("x.y", 7)


@pytest.mark.django_db
def test_evaluations_requested_while_the_broker_is_down_stay_pending(
    broker_down, django_capture_on_commit_callbacks, hate_task, tiny_registered_model
):
    dataset = make_toy_dataset(hate_task, "queued-while-down")
    with django_capture_on_commit_callbacks(execute=True):
        [score_id] = request_evaluations(model=tiny_registered_model, dataset=dataset)
    assert Score.objects.get(pk=score_id).status == Score.Status.PENDING
