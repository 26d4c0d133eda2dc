"""Registering from a hub id where no hub can be reached: a fast, clear failure kept on the model."""

from __future__ import annotations

import time

import pytest

from models_registry.hub import HubDownloadError, download_hub_model
from models_registry.models import RegisteredModel
from models_registry.services import ModelRegistryError, register_hub_model


def test_offline_hub_fails_fast_with_a_clear_message(hate_task, owner, django_capture_on_commit_callbacks):
    started = time.monotonic()
    with django_capture_on_commit_callbacks(execute=True):
        model = register_hub_model(
            task=hate_task, name="from-hub", hub_id="someone/some-model", owner=owner, card={"licence": "MIT"}
        )
    model.refresh_from_db()
    assert time.monotonic() - started < 10
    assert model.source == RegisteredModel.Source.HUB
    assert model.status == RegisteredModel.Status.FAILED
    assert model.error_message.startswith(
        "the model hub cannot be reached from this machine (HF_HUB_OFFLINE is set): "
    )
    assert "someone/some-model" in model.error_message
    assert model.card["hub_id"] == "someone/some-model"


def test_network_error_fails_fast(monkeypatch, tmp_path):
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "is_offline_mode", lambda: False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    started = time.monotonic()
    with pytest.raises(
        HubDownloadError, match=r"cannot be reached from this machine \((network error|HF_HUB)"
    ):
        download_hub_model("someone/some-model", tmp_path / "m", endpoint="http://127.0.0.1:1")
    assert time.monotonic() - started < 30


@pytest.mark.parametrize("hub_id", ["", "../etc", "a/b/c", "/abs", "owner/na me"])
def test_invalid_hub_ids_are_refused(hate_task, owner, hub_id):
    with pytest.raises(ModelRegistryError, match="not a hub model id"):
        register_hub_model(task=hate_task, name="x", hub_id=hub_id, owner=owner)
    assert not RegisteredModel.objects.filter(name="x").exists()
