"""Job workers run at DYNABENCH_JOB_NICENESS (core.job_priority): the web's requests win the CPU."""

from __future__ import annotations

import multiprocessing
import os

import pytest
from django_q.signals import post_spawn

from core.job_priority import lower_job_worker_priority


def _spawned_worker(queue, niceness: int) -> None:
    """What django-q2 does in a worker process it starts, then what a job started there would see."""
    from django.conf import settings

    settings.DYNABENCH_JOB_NICENESS = niceness
    post_spawn.send(sender="django_q", proc_name="Worker-test")
    queue.put(os.nice(0))


def _niceness_of_a_spawned_worker(niceness: int) -> int:
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    process = context.Process(target=_spawned_worker, args=(queue, niceness), name="Worker-test")
    process.start()
    process.join(30)
    return queue.get(timeout=5)


# The niceness the tests run at (0 unless started under `nice`); a worker is only ever lowered from it.
BASE = os.nice(0)


@pytest.mark.skipif(BASE >= 10, reason="the tests run at niceness 10 or more")
@pytest.mark.parametrize("setting", [19, 10])
def test_a_job_worker_process_is_lowered_to_the_setting(setting):
    assert _niceness_of_a_spawned_worker(setting) == setting
    assert os.nice(0) == BASE  # the test process itself is left alone


def test_zero_leaves_the_worker_at_the_clusters_priority():
    assert _niceness_of_a_spawned_worker(0) == BASE


def test_a_job_run_inline_leaves_the_callers_process_alone(settings):
    # Q_CLUSTER["sync"]: django-q2 runs the job in the calling process (a test, a web request), which
    # also sends post_spawn; the web must not be lowered.
    settings.DYNABENCH_JOB_NICENESS = 19
    assert lower_job_worker_priority(sender="django_q", proc_name="MainProcess") is None
    post_spawn.send(sender="django_q", proc_name="MainProcess")
    assert os.nice(0) == BASE


def test_the_setting_is_refused_outside_0_to_19(monkeypatch):
    from core.env import Env

    monkeypatch.setenv("DYNABENCH_JOB_NICENESS", "20")
    with pytest.raises(Exception, match="DYNABENCH_JOB_NICENESS.*at most 19"):
        Env().int("DYNABENCH_JOB_NICENESS", default=19, minimum=0, maximum=19)
