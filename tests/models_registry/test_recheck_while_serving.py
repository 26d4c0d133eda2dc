"""A ready model checked again ("Check again") keeps serving while its check waits and runs: it stays
ready, answers the predict API, stays its round's target and keeps its leaderboard row; the check's
outcome replaces it when it ends (a tester found the model offline for as long as the check waited
behind a busy worker)."""

from __future__ import annotations

from pathlib import Path

import pytest

from models_registry import jobs, services
from models_registry.models import RegisteredModel
from models_registry.selectors import target_models_for_round
from models_registry.services import ModelRegistryError, check_again, set_runtime
from tests.helpers.api import forced_client as api

Recheck = RegisteredModel.Recheck


def _state(model) -> tuple[str, str]:
    return tuple(RegisteredModel.objects.filter(pk=model.pk).values_list("status", "recheck").get())


def _serves(model, annotator) -> int:
    response = api(annotator).post(
        f"/api/models/{model.pk}/predict/", {"inputs": [{"statement": "a probe"}]}, format="json"
    )
    return response.status_code


def test_a_ready_model_serves_while_its_check_is_queued_and_running(
    tiny_registered_model, hate_round, annotator, monkeypatch, django_capture_on_commit_callbacks
):
    model = tiny_registered_model
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        check_again(model)
    assert len(callbacks) == 1  # the job, queued on commit
    assert _state(model) == ("ready", "queued")
    assert _serves(model, annotator) == 200
    assert target_models_for_round(hate_round) == [model]
    with pytest.raises(ModelRegistryError, match="tiny-target already has a check queued or running"):
        check_again(model)  # a second press queues nothing more

    seen = {}
    real_run_check = services.run_check

    def observed(checked):
        seen["state"] = _state(checked)
        seen["predict"] = _serves(checked, annotator)
        seen["targets"] = target_models_for_round(hate_round)
        return real_run_check(checked)

    monkeypatch.setattr(services, "run_check", observed)
    assert jobs.check_model(model.pk) == "ready"
    assert seen == {"state": ("ready", "running"), "predict": 200, "targets": [model]}
    assert _state(model) == ("ready", "")
    assert jobs.check_model(model.pk) == "ready"  # a second delivery of the job runs no check
    assert "state" in seen and len(seen) == 3


def test_a_failed_check_again_takes_the_model_offline_with_its_reason(tiny_registered_model, annotator):
    model = tiny_registered_model
    check_again(model)
    Path(model.path, "config.json").write_text("{not json")  # the files it serves broke meanwhile
    assert jobs.check_model(model.pk) == "failed"
    model.refresh_from_db()
    assert (model.status, model.recheck) == ("failed", "")
    assert model.error_message
    assert _serves(model, annotator) == 409


def test_a_crashing_check_again_ends_failed_and_can_be_queued_again(tiny_registered_model, monkeypatch):
    model = tiny_registered_model
    check_again(model)

    def crash(checked):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(services, "run_check", crash)
    assert jobs.check_model(model.pk) == "failed"
    model.refresh_from_db()
    assert (model.status, model.recheck) == ("failed", "")
    assert model.error_message == "the check crashed: RuntimeError: disk on fire"
    check_again(model)  # a failed model goes back through uploaded
    assert _state(model) == ("uploaded", "")


def test_a_runtime_cannot_be_pinned_while_the_check_again_runs(tiny_registered_model):
    model = tiny_registered_model
    check_again(model)
    with pytest.raises(ModelRegistryError, match="tiny-target is being checked again: pin its runtime once"):
        set_runtime(model, "torch")
    assert _state(model) == ("ready", "queued")


def test_the_admin_shows_a_ready_model_being_checked_again(client, owner, tiny_registered_model):
    client.force_login(owner)
    url = "/admin/models_registry/registeredmodel/"
    response = client.post(url, {"action": "check_again", "_selected_action": [tiny_registered_model.pk]})
    assert response.status_code == 302
    page = client.get(url).content.decode()
    assert "Ready (check again queued, still serving)" in page
    page = client.get(f"{url}{tiny_registered_model.pk}/change/").content.decode()
    assert "Check again queued: it keeps serving and being evaluated until the check ends" in page
