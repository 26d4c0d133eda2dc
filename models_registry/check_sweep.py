"""The sweep of model checks that no worker will finish (``jobs.sweep_model_checks_job``, every 5 minutes).

A check claims its model with a conditional UPDATE (``jobs.check_model``): ``uploaded`` -> ``checking``,
or, for a ready model checked again, ``recheck`` ``queued`` -> ``running``. A worker stopped in the
middle (killed, out of memory, past ``Q_CLUSTER["timeout"]``) leaves the row claimed for ever: a
``checking`` model never becomes ready, and a ``running`` re-check refuses every later "Check again".
A job lost before it ran (the broker was down when it was queued) leaves ``uploaded`` or ``queued``
with nothing on its way. The sweep mends each, by a conditional UPDATE on what it read, so a check that
ends meanwhile keeps its outcome:

* claimed for longer than the worker timeout (plus a minute): no worker still runs it. A ``checking``
  model fails with ``CHECK_CUT_OFF`` (a check that kills its worker would kill the next one too, so it
  is not started again by itself); a ready model's re-check is dropped: it goes on serving as it was,
  and "Check again" works again.
* ``uploaded`` or re-check ``queued`` untouched for ``REQUEUE_SECONDS``: the check is queued again (a
  second delivery of a job still waiting is claimed once, so this is harmless), and the row is touched
  so that it is queued at most once per period.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.db.models import Q
from django.utils import timezone

from core.job_queue import worker_timeout_seconds
from models_registry.models import RegisteredModel
from models_registry.services import enqueue_check

logger = logging.getLogger(__name__)

#: Seconds a claimed check may run past the worker timeout before it counts as cut off.
MARGIN_SECONDS = 60
#: Seconds an unclaimed check waits before it is queued again.
REQUEUE_SECONDS = 600

CHECK_CUT_OFF = (
    "the check was cut off with its worker (stopped, out of memory, or past the job timeout); "
    "press Check again to run it once more"
)


def sweep_model_checks(*, now=None) -> dict[str, int]:
    """Mend the checks no worker will finish (module docstring).

    Returns:
        ``{"failed": n, "recheck_dropped": n, "requeued": n}``: ``checking`` models failed, ready models
        whose re-check was dropped, checks queued again. With no worker timeout set
        (``Q_CLUSTER["timeout"]``), a claimed check is never taken for cut off.
    """
    now = now or timezone.now()
    Status, Recheck = RegisteredModel.Status, RegisteredModel.Recheck
    failed = dropped = 0
    timeout = worker_timeout_seconds()
    if timeout is not None:
        cut_off = now - timedelta(seconds=timeout + MARGIN_SECONDS)
        failed = RegisteredModel.objects.filter(status=Status.CHECKING, updated_at__lt=cut_off).update(
            status=Status.FAILED, error_message=CHECK_CUT_OFF, updated_at=now
        )
        dropped = RegisteredModel.objects.filter(
            status=Status.READY, recheck=Recheck.RUNNING, updated_at__lt=cut_off
        ).update(recheck=Recheck.NONE, updated_at=now)
    waited = now - timedelta(seconds=REQUEUE_SECONDS)
    waiting = list(
        RegisteredModel.objects.filter(updated_at__lt=waited)
        .filter(Q(status=Status.UPLOADED) | Q(status=Status.READY, recheck=Recheck.QUEUED))
        .values_list("pk", "status", "recheck")
    )
    requeued = []
    for pk, status, recheck in waiting:
        # Touched only if still waiting as read: a check that claimed it meanwhile is left alone.
        if RegisteredModel.objects.filter(pk=pk, status=status, recheck=recheck).update(updated_at=now):
            enqueue_check(pk)
            requeued.append(pk)
    if failed or dropped or requeued:
        logger.warning(
            "model checks mended: %s cut off (failed), %s re-checks dropped, %s queued again",
            failed,
            dropped,
            len(requeued),
        )
    return {"failed": failed, "recheck_dropped": dropped, "requeued": len(requeued)}
