"""Background jobs yield the CPU to the web: the job cluster's worker processes run at a lower priority.

Why: on one machine the crowd's requests and the owner's jobs (training the next target, evaluating,
exporting, replaying) share the same cores. At equal priority a training job takes half of them and the
web's tail latency grows several-fold; a row lock held by a request thread waiting for the CPU then makes
every other writer wait too. With the job workers at niceness 19, Linux's scheduler gives a runnable web
thread about 68 times the CPU share of a job thread (CFS weights 1024 and 15), and the jobs still use
every core the web leaves idle (docs/serving.md, "Background jobs yield to the web").

Only the processes that execute jobs are lowered: django-q2 sends ``post_spawn`` in each worker process it
starts, before the first job, so the threads a job starts later (torch's, ONNX Runtime's) inherit the
niceness. The cluster's own sentinel, pusher and monitor stay at the operator's priority. A job run
inline (``Q_CLUSTER["sync"]``: tests, ``DYNABENCH_JOBS_SYNC=1``) runs in the caller's process, which is
left alone.
"""

from __future__ import annotations

import logging
import multiprocessing
import os

from django.conf import settings

logger = logging.getLogger(__name__)


def lower_job_worker_priority(sender=None, proc_name: str = "", **kwargs) -> int | None:
    """django-q2 ``post_spawn`` receiver: raise this worker process's niceness to
    ``settings.DYNABENCH_JOB_NICENESS`` (0-19; unchanged if it is already at least that).

    Returns:
        The niceness now (an int), or None when nothing was done: the process is the main one (a job
        run inline), or the setting is 0.
    """
    target = int(settings.DYNABENCH_JOB_NICENESS)
    if target <= 0 or multiprocessing.current_process().name == "MainProcess":
        return None
    current = os.nice(0)
    if current < target:
        current = os.nice(target - current)
        logger.info("job worker %s runs at niceness %d (DYNABENCH_JOB_NICENESS)", proc_name, current)
    return current
