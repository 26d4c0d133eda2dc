"""A refused upload cannot be re-checked (its reason stays), and a fixed zip under the same name replaces
a failed model of the same owner (a tester found neither held)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.urls import reverse

from models_registry.models import RegisteredModel, RoundTarget
from models_registry.services import (
    ModelRegistryError,
    check_again,
    register_hub_model,
    register_local_model,
    register_uploaded_model,
)
from tests.helpers.zips import zip_bytes, zip_dir

CHANGELIST = reverse("admin:models_registry_registeredmodel_changelist")
REFUSED_REASON = "upload refused: entry '../x' points outside the model folder ('..'); refused"


def _refused(task, owner, name="fixed-later") -> RegisteredModel:
    model = register_uploaded_model(
        task=task, name=name, owner=owner, fileobj=zip_bytes([("config.json", b"{}"), ("../x", b"evil")])
    )
    model.refresh_from_db()
    assert model.status == RegisteredModel.Status.FAILED
    assert model.error_message == REFUSED_REASON
    return model


def test_check_again_refuses_a_refused_upload_and_keeps_its_reason(hate_task, owner):
    model = _refused(hate_task, owner)
    with pytest.raises(ModelRegistryError, match="has no files to check"):
        check_again(model)
    model.refresh_from_db()
    assert (model.status, model.error_message) == (RegisteredModel.Status.FAILED, REFUSED_REASON)


def test_the_admin_action_says_so_and_keeps_the_reason(
    client, owner, hate_task, django_capture_on_commit_callbacks
):
    model = _refused(hate_task, owner)
    client.force_login(owner)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = client.post(
            CHANGELIST, {"action": "check_again", "_selected_action": [model.pk]}, follow=True
        )
    assert not callbacks  # nothing queued
    shown = [str(m) for m in response.context["messages"]]
    assert shown == [
        "Not checked again: fixed-later has no files to check (its upload was refused or its files are "
        "gone); upload a fixed zip under the same name to replace it."
    ]
    model.refresh_from_db()
    assert (model.status, model.error_message) == (RegisteredModel.Status.FAILED, REFUSED_REASON)


def test_check_again_still_requeues_a_hub_model(hate_task, owner, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        model = register_hub_model(task=hate_task, name="hubbed", owner=owner, hub_id="someone/model")
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        check_again(model)
    assert len(callbacks) == 1
    assert RegisteredModel.objects.get(pk=model.pk).status == RegisteredModel.Status.UPLOADED


def test_a_fixed_zip_replaces_the_refused_model_of_the_same_owner(
    hate_task, owner, tiny_model_dir, django_capture_on_commit_callbacks
):
    refused = _refused(hate_task, owner)
    with django_capture_on_commit_callbacks(execute=True):
        fixed = register_uploaded_model(
            task=hate_task, name="fixed-later", owner=owner, fileobj=zip_dir(tiny_model_dir)
        )
    fixed.refresh_from_db()
    assert fixed.status == RegisteredModel.Status.READY, fixed.error_message
    assert fixed.pk != refused.pk
    assert list(RegisteredModel.objects.filter(name="fixed-later")) == [fixed]


def test_replacing_a_failed_upload_removes_its_folder(
    hate_task, owner, tiny_model_dir, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        failed = register_uploaded_model(
            task=hate_task, name="m", owner=owner, fileobj=zip_dir(tiny_model_dir, skip=("config.json",))
        )
    failed.refresh_from_db()
    assert failed.status == RegisteredModel.Status.FAILED and Path(failed.path).is_dir()
    with django_capture_on_commit_callbacks(execute=True):
        fixed = register_uploaded_model(
            task=hate_task, name="m", owner=owner, fileobj=zip_dir(tiny_model_dir)
        )
    assert not Path(failed.path).exists()
    assert Path(fixed.path).is_dir()


def test_a_failed_local_model_is_replaced_but_its_folder_is_left_alone(
    hate_task, owner, tmp_path, tiny_model_dir
):
    folder = tmp_path / "operator-folder"
    folder.mkdir()
    (folder / "config.json").write_text("{}")  # not a model: the check fails
    failed = register_local_model(task=hate_task, name="m", path=folder, card={}, owner=owner)
    assert failed.status == RegisteredModel.Status.FAILED
    register_uploaded_model(task=hate_task, name="m", owner=owner, fileobj=zip_dir(tiny_model_dir))
    assert (folder / "config.json").is_file()


@pytest.mark.parametrize("who", ["other owner", "no owner"])
def test_another_owners_failed_model_is_not_replaced(hate_task, owner, annotator, tiny_model_dir, who):
    _refused(hate_task, annotator if who == "other owner" else None)
    with pytest.raises(
        ModelRegistryError, match="already has a model named 'fixed-later'; choose another name"
    ):
        register_uploaded_model(
            task=hate_task, name="fixed-later", owner=owner, fileobj=zip_dir(tiny_model_dir)
        )
    assert RegisteredModel.objects.get(name="fixed-later").error_message == REFUSED_REASON


def test_a_ready_model_is_not_replaced(hate_task, owner, tiny_model_dir, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        ready = register_uploaded_model(
            task=hate_task, name="m", owner=owner, fileobj=zip_dir(tiny_model_dir)
        )
    with pytest.raises(ModelRegistryError, match=r"already has a model named 'm' \(ready\)"):
        register_uploaded_model(task=hate_task, name="m", owner=owner, fileobj=zip_dir(tiny_model_dir))
    assert RegisteredModel.objects.get(name="m").pk == ready.pk


def test_a_failed_model_still_referenced_is_not_replaced(hate_task, hate_round, owner, tiny_model_dir):
    refused = _refused(hate_task, owner)
    RoundTarget.objects.create(round=hate_round, model=refused)  # e.g. a target that failed a re-check
    with pytest.raises(ModelRegistryError, match="cannot be replaced"):
        register_uploaded_model(
            task=hate_task, name="fixed-later", owner=owner, fileobj=zip_dir(tiny_model_dir)
        )
    assert RegisteredModel.objects.get(name="fixed-later").pk == refused.pk
