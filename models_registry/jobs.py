"""django-q2 jobs of the model registry: check a registered model (download, load, probe).

Queued on commit by ``services.request_check`` (``core.job_queue``: primary keys only, inline when
``Q_CLUSTER["sync"]`` is on); a conditional UPDATE decides which worker runs a job.
"""

from __future__ import annotations

import logging

from django.utils import timezone

from engine.runtime.model_files import without_server_paths
from models_registry import generative, services
from models_registry.check_sweep import sweep_model_checks
from models_registry.context_room import check_context_room
from models_registry.kinds import chat_models
from models_registry.models import RegisteredModel
from tasks.models import Round

logger = logging.getLogger(__name__)


def check_model(model_id: int) -> str:
    """Check model ``model_id``: ``uploaded`` -> ``checking`` -> ``ready`` or ``failed`` (with its message);
    a ready model checked again (``services.check_again``) stays ``ready`` until the outcome is stored.

    Safe to run twice: only the worker whose ``UPDATE ... WHERE status = 'uploaded'`` changes the row
    runs the check; others return the status they find. Nothing is raised to the worker: an
    unexpected exception ends as ``failed`` with its type and message (server paths taken out; the
    traceback is logged).

    Returns:
        The final status, or the current one when the job was not claimed ("missing" for no such model).
    """
    # Two deliveries of this job (or two workers) race here; one UPDATE wins. A ready model checked
    # again is claimed by its ``recheck`` and stays ready (serving) while it is checked.
    claimed = RegisteredModel.objects.filter(pk=model_id, status=RegisteredModel.Status.UPLOADED).update(
        status=RegisteredModel.Status.CHECKING, error_message="", updated_at=timezone.now()
    ) or RegisteredModel.objects.filter(
        pk=model_id, status=RegisteredModel.Status.READY, recheck=RegisteredModel.Recheck.QUEUED
    ).update(recheck=RegisteredModel.Recheck.RUNNING, updated_at=timezone.now())
    if not claimed:
        current = RegisteredModel.objects.filter(pk=model_id).values_list("status", flat=True).first()
        logger.info("model check %s not started: the model is %s", model_id, current or "missing")
        return current or "missing"
    model = RegisteredModel.objects.select_related("task").get(pk=model_id)
    try:
        check = generative.run_generative_check if chat_models(model.task.cfg) else services.run_check
        status, _ = check(model)
    except Exception as exc:  # noqa: BLE001 - the owner must see every failure on the model
        logger.exception("model check %s failed", model_id)  # the full detail, paths included
        message = without_server_paths(f"the check crashed: {type(exc).__name__}: {exc}", model.path or None)
        RegisteredModel.objects.filter(pk=model_id).update(
            status=RegisteredModel.Status.FAILED,
            recheck=RegisteredModel.Recheck.NONE,
            updated_at=timezone.now(),
            error_message=message[: services.MAX_ERROR],
        )
        return RegisteredModel.Status.FAILED
    return status


#: Registered by ``ModelsRegistryConfig.ready()``: ``sweep_model_checks_job`` every 5 minutes.
CHECK_SWEEP_SCHEDULE = "mend model checks"


def sweep_model_checks_job() -> dict[str, int]:
    """Mend the model checks no worker will finish (``check_sweep.sweep_model_checks``; on the
    ``CHECK_SWEEP_SCHEDULE``, every 5 minutes)."""
    return sweep_model_checks()


def check_context_room_job(round_id: int) -> str:
    """Mark the contexts of round ``round_id`` that leave its targets no room for the input
    (``context_room.check_context_room``; idempotent, so a job delivered twice does no harm).

    Returns:
        What was found, in words ("missing" for no such round).
    """
    round_ = Round.objects.select_related("task").filter(pk=round_id).first()
    if round_ is None:
        return "missing"
    report = check_context_room(round_)
    if report.left_out:
        logger.info("round %s: %s", round_id, report)
    return str(report)
