"""The sweep of model checks no worker will finish (``models_registry.check_sweep``): a check cut off with
its worker, and a check lost before it ran."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from models_registry import check_sweep, jobs
from models_registry.check_sweep import CHECK_CUT_OFF, MARGIN_SECONDS, REQUEUE_SECONDS, sweep_model_checks
from models_registry.models import RegisteredModel
from models_registry.services import ModelRegistryError, check_again

TIMEOUT = 3600  # Q_CLUSTER["timeout"] in the settings


@pytest.fixture
def queued(monkeypatch) -> list[int]:
    """The model ids the sweep queued a check for (the broker is not called)."""
    ids: list[int] = []
    monkeypatch.setattr(check_sweep, "enqueue_check", ids.append)
    return ids


@pytest.fixture(autouse=True)
def worker_timeout(settings):
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "timeout": TIMEOUT}


def _set(model, **fields) -> None:
    RegisteredModel.objects.filter(pk=model.pk).update(**fields)


def _after(seconds: float):
    return timezone.now() + timedelta(seconds=seconds)


def test_a_check_cut_off_with_its_worker_fails_with_its_reason(tiny_registered_model, queued):
    model = tiny_registered_model
    _set(model, status="checking", updated_at=timezone.now())
    # Within the worker timeout (and its margin) a worker may still be running it.
    assert sweep_model_checks(now=_after(TIMEOUT + MARGIN_SECONDS - 5)) == {
        "failed": 0,
        "recheck_dropped": 0,
        "requeued": 0,
    }
    model.refresh_from_db()
    assert model.status == "checking"
    assert sweep_model_checks(now=_after(TIMEOUT + MARGIN_SECONDS + 5))["failed"] == 1
    model.refresh_from_db()
    assert (model.status, model.error_message) == ("failed", CHECK_CUT_OFF)
    assert queued == []  # not started again by itself: it may kill the next worker too
    check_again(model)  # the owner can
    model.refresh_from_db()
    assert model.status == "uploaded"


def test_a_cut_off_check_again_is_dropped_and_the_model_keeps_serving(tiny_registered_model, queued):
    model = tiny_registered_model
    runtime = model.runtime
    check_again(model)
    assert RegisteredModel.objects.filter(pk=model.pk, recheck="queued").update(
        recheck="running", updated_at=timezone.now()
    )
    with pytest.raises(ModelRegistryError, match="already has a check queued or running"):
        check_again(RegisteredModel.objects.get(pk=model.pk))
    assert sweep_model_checks(now=_after(TIMEOUT + MARGIN_SECONDS + 5))["recheck_dropped"] == 1
    model.refresh_from_db()
    assert (model.status, model.recheck, model.runtime) == ("ready", "", runtime)
    check_again(model)  # no longer refused
    model.refresh_from_db()
    assert model.recheck == "queued"


def test_a_check_lost_before_it_ran_is_queued_again_once_per_period(tiny_registered_model, queued):
    model = tiny_registered_model
    check_again(model)  # queued; its job never reached a worker (say the broker was down)
    assert sweep_model_checks(now=_after(REQUEUE_SECONDS - 5))["requeued"] == 0
    later = _after(REQUEUE_SECONDS + 5)
    assert sweep_model_checks(now=later)["requeued"] == 1
    assert queued == [model.pk]
    # Touched when queued again: the next sweeps of the same period leave it.
    assert sweep_model_checks(now=later + timedelta(seconds=60))["requeued"] == 0
    assert queued == [model.pk]
    # The job queued again runs the check as any other would.
    assert jobs.check_model(model.pk) == "ready"
    model.refresh_from_db()
    assert model.recheck == ""


def test_an_uploaded_model_waiting_too_long_is_queued_again(tiny_registered_model, queued):
    model = tiny_registered_model
    _set(model, status="uploaded", updated_at=timezone.now() - timedelta(seconds=REQUEUE_SECONDS + 5))
    assert sweep_model_checks()["requeued"] == 1
    assert queued == [model.pk]


def test_without_a_worker_timeout_a_claimed_check_is_never_taken_for_cut_off(
    tiny_registered_model, queued, settings
):
    settings.Q_CLUSTER = {k: v for k, v in settings.Q_CLUSTER.items() if k != "timeout"}
    _set(tiny_registered_model, status="checking", updated_at=timezone.now() - timedelta(days=2))
    assert sweep_model_checks()["failed"] == 0
    tiny_registered_model.refresh_from_db()
    assert tiny_registered_model.status == "checking"
