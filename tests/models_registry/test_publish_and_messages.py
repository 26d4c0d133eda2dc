"""New registrations are unpublished (docs/domain.md, "Visibility"), and failure messages name no server
path or folder (they are shown to the model's owner and must not reveal the server's layout)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from safetensors.torch import load_file, save_file

from engine.runtime.classifier import clear_cache
from engine.runtime.model_files import without_server_paths
from models_registry import inference
from models_registry.models import RegisteredModel
from models_registry.services import (
    register_endpoint_model,
    register_hub_model,
    register_local_model,
    register_uploaded_model,
)
from tests.helpers.tiny_models import build_tiny_classifier
from tests.helpers.zips import zip_dir

UUID_HEX = re.compile(r"[0-9a-f]{32}")


@pytest.fixture(autouse=True)
def _fresh_cache():
    clear_cache()
    yield
    clear_cache()


def _assert_public(message: str, model: RegisteredModel, model_root: Path) -> None:
    assert message
    assert str(model_root) not in message and "/tmp" not in message
    assert Path(model.path).name not in message
    assert not UUID_HEX.search(message), message


def test_uploads_hub_ids_and_endpoints_start_unpublished(
    hate_task, owner, tiny_model_dir, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        upload = register_uploaded_model(
            task=hate_task, name="up", owner=owner, fileobj=zip_dir(tiny_model_dir)
        )
        hub = register_hub_model(task=hate_task, name="hub", owner=owner, hub_id="someone/model")
        endpoint, _ = register_endpoint_model(
            task=hate_task, name="ep", owner=owner, url="http://127.0.0.1:1/x"
        )
    for model in (upload, hub, endpoint):
        model.refresh_from_db()
        assert model.is_published is False, model.name
    assert upload.status == RegisteredModel.Status.READY  # ready, yet unpublished until the owner says so


def test_an_uploader_may_publish_at_once(hate_task, owner, tiny_model_dir):
    model = register_uploaded_model(
        task=hate_task, name="up", owner=owner, fileobj=zip_dir(tiny_model_dir), is_published=True
    )
    assert RegisteredModel.objects.get(pk=model.pk).is_published is True


def test_a_just_uploaded_model_is_not_found_by_anonymous_visitors(
    client, hate_task, owner, tiny_model_dir, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        model = register_uploaded_model(
            task=hate_task, name="up", owner=owner, fileobj=zip_dir(tiny_model_dir)
        )
    url = reverse("leaderboards:model", args=[model.pk])
    assert client.get(url).status_code == 404
    client.force_login(owner)
    assert client.get(url).status_code == 200


def test_local_registrations_are_published_when_ready_only(hate_task, tiny_model_dir, tmp_path):
    ready = register_local_model(task=hate_task, name="ready", path=tiny_model_dir, card={})
    assert ready.status == RegisteredModel.Status.READY and ready.is_published is True
    failed = register_local_model(task=hate_task, name="failed", path=tmp_path / "nowhere", card={})
    assert failed.status == RegisteredModel.Status.FAILED and failed.is_published is False
    # Re-registering keeps the owner's choice.
    RegisteredModel.objects.filter(pk=ready.pk).update(is_published=False)
    again = register_local_model(task=hate_task, name="ready", path=tiny_model_dir, card={})
    assert again.is_published is False
    assert register_local_model(
        task=hate_task, name="ready", path=tiny_model_dir, card={}, is_published=True
    ).is_published


def test_admin_upload_is_unpublished_and_says_so(client, owner, hate_task, tiny_model_dir):
    client.force_login(owner)
    response = client.post(
        reverse("admin:models_registry_registeredmodel_register"),
        {
            "source": "upload",
            "name": "from-admin",
            "task": hate_task.pk,
            "zip_file": SimpleUploadedFile("m.zip", zip_dir(tiny_model_dir).getvalue()),
        },
        follow=True,
    )
    assert RegisteredModel.objects.get(name="from-admin").is_published is False
    shown = [str(m) for m in response.context["messages"]]
    assert "from-admin is unpublished: only you and the task's owners see it." in shown[-1]


def test_publish_and_unpublish_actions(client, owner, hate_task, tiny_model_dir):
    model = register_uploaded_model(task=hate_task, name="up", owner=owner, fileobj=zip_dir(tiny_model_dir))
    client.force_login(owner)
    changelist = reverse("admin:models_registry_registeredmodel_changelist")
    client.post(changelist, {"action": "publish", "_selected_action": [model.pk]})
    assert RegisteredModel.objects.get(pk=model.pk).is_published is True
    client.post(changelist, {"action": "unpublish", "_selected_action": [model.pk]})
    assert RegisteredModel.objects.get(pk=model.pk).is_published is False


def test_an_unreadable_weights_file_fails_without_naming_the_folder(
    hate_task, owner, tiny_model_dir, model_root, django_capture_on_commit_callbacks
):
    (tiny_model_dir / "model.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00not json at all!")
    with django_capture_on_commit_callbacks(execute=True):
        model = register_uploaded_model(
            task=hate_task, name="bad", owner=owner, fileobj=zip_dir(tiny_model_dir)
        )
    model.refresh_from_db()
    assert model.status == RegisteredModel.Status.FAILED
    assert model.error_message.startswith("could not load the model: ")
    _assert_public(model.error_message, model, model_root)


def test_a_missing_folder_is_reported_without_its_path(hate_task, owner, tiny_model_dir, model_root):
    model = register_local_model(
        task=hate_task, name="gone", path=model_root / "hate-speech" / ("a" * 32), card={}
    )
    assert model.error_message == "the model directory does not exist on the server (its files are gone)"


def _nan_head(directory: Path) -> Path:
    weights = directory / "model.safetensors"
    state = load_file(weights)
    state["classifier.bias"] = torch.full_like(state["classifier.bias"], float("nan"))
    save_file(state, weights)
    return directory


def test_non_finite_scores_name_the_model_by_its_name(
    hate_task, owner, tmp_path, model_root, django_capture_on_commit_callbacks
):
    directory = _nan_head(build_tiny_classifier(tmp_path / "nan"))
    with django_capture_on_commit_callbacks(execute=True):
        model = register_uploaded_model(
            task=hate_task, name="my-model", owner=owner, fileobj=zip_dir(directory)
        )
    model.refresh_from_db()
    assert model.error_message == "probe input failed: the model produced non-finite scores (NaN or infinity)"
    _assert_public(model.error_message, model, model_root)
    with pytest.raises(inference.InferenceError) as caught:
        inference.predict(model, [{"statement": "hello"}])
    assert str(caught.value) == "model my-model: the model produced non-finite scores (NaN or infinity)"


def test_a_crashing_check_keeps_no_path(hate_task, owner, tiny_model_dir, model_root, monkeypatch):
    from models_registry import jobs, services

    model = register_uploaded_model(
        task=hate_task, name="crash", owner=owner, fileobj=zip_dir(tiny_model_dir)
    )

    def crash(m):
        raise OSError(f"[Errno 5] Input/output error: '{m.path}/model.safetensors'")

    monkeypatch.setattr(services, "run_check", crash)
    assert jobs.check_model(model.pk) == RegisteredModel.Status.FAILED
    model.refresh_from_db()
    assert (
        model.error_message == "the check crashed: OSError: [Errno 5] Input/output error: 'model.safetensors'"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("could not load /srv/m/hate/abc/: boom", "could not load the model folder: boom"),
        ("no file /srv/m/hate/abc/config.json", "no file config.json"),
        ("in /srv/m/hate/abc", "in the model folder"),
        ("see /usr/lib/python3/x.py and https://example.org/a/b", "see x.py and https://example.org/a/b"),
        ("relative a/b/c and ./d/e stay", "relative a/b/c and ./d/e stay"),
    ],
)
def test_without_server_paths(text, expected):
    assert without_server_paths(text, "/srv/m/hate/abc") == expected
