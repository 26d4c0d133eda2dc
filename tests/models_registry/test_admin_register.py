"""The admin's "Register a model" page and the model change page's status."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from engine.runtime.weights import count_parameters
from models_registry.models import RegisteredModel
from tests.helpers.zips import zip_bytes, zip_dir

URL = reverse("admin:models_registry_registeredmodel_register")

CARD_FIELDS = {
    "backbone": "tiny-random-bert",
    "licence": "MIT",
    "training_data": "none",
    "paper_link": "https://example.org/paper",
    "description": "Tiny.",
}


@pytest.fixture
def owner_client(client, owner):
    client.force_login(owner)
    return client


def _post(client, hate_task, fileobj, name="from-admin", **extra):
    data = {
        "source": "upload",
        "name": name,
        "task": hate_task.pk,
        "zip_file": SimpleUploadedFile("model.zip", fileobj.getvalue(), content_type="application/zip"),
        **CARD_FIELDS,
        **extra,
    }
    return client.post(URL, data)


def test_owner_gets_the_form_with_owned_tasks_only(owner_client, hate_task):
    from tasks.models import Task

    other = Task.objects.create(name="Not mine", slug="not-mine", config=hate_task.config)
    response = owner_client.get(URL)
    assert response.status_code == 200
    choices = list(response.context["form"].fields["task"].queryset)
    assert choices == [hate_task]
    assert other.name not in response.content.decode()
    assert "parameter_count" not in response.content.decode()


def test_owner_uploads_a_zip_and_the_check_runs(
    owner_client, owner, hate_task, tiny_model_dir, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = _post(owner_client, hate_task, zip_dir(tiny_model_dir))
    model = RegisteredModel.objects.get(task=hate_task, name="from-admin")
    assert response.status_code == 302
    assert response["Location"] == reverse("admin:models_registry_registeredmodel_change", args=[model.pk])
    assert model.status == RegisteredModel.Status.READY, model.error_message
    assert model.owner == owner
    assert model.parameter_count == count_parameters(tiny_model_dir)
    assert model.card["licence"] == "MIT" and model.card["paper_link"] == "https://example.org/paper"
    page = owner_client.get(response["Location"]).content.decode()
    assert "Status: Ready." in page


def test_a_refused_upload_shows_why_on_the_model_page(owner_client, hate_task):
    fileobj = zip_bytes([("config.json", b"{}"), ("../evil", b"x")])
    response = _post(owner_client, hate_task, fileobj, name="evil")
    model = RegisteredModel.objects.get(name="evil")
    assert model.status == RegisteredModel.Status.FAILED
    page = owner_client.get(response["Location"]).content.decode()
    assert 'id="model-status"' in page and "Status: Failed." in page
    assert "points outside the model folder" in page


def test_a_missing_zip_or_a_taken_name_is_a_form_error(owner_client, hate_task, tiny_registered_model):
    response = owner_client.post(URL, {"source": "upload", "name": "x", "task": hate_task.pk})
    assert response.status_code == 200
    assert "Choose the zip file." in response.content.decode()
    response = owner_client.post(
        URL, {"source": "hub", "name": "tiny-target", "task": hate_task.pk, "hub_id": "a/b"}
    )
    assert "already has a model named" in response.content.decode()
    assert RegisteredModel.objects.count() == 1


def test_an_owner_replaces_their_failed_model_by_registering_again_under_its_name(
    owner_client, hate_task, tiny_model_dir, django_capture_on_commit_callbacks
):
    refused = zip_bytes([("config.json", b"{}"), ("../evil", b"x")])
    _post(owner_client, hate_task, refused, name="second-try")
    failed = RegisteredModel.objects.get(name="second-try")
    assert failed.status == RegisteredModel.Status.FAILED
    with django_capture_on_commit_callbacks(execute=True):
        response = _post(owner_client, hate_task, zip_dir(tiny_model_dir), name="second-try")
    assert response.status_code == 302
    model = RegisteredModel.objects.get(task=hate_task, name="second-try")
    assert model.pk != failed.pk and model.status == RegisteredModel.Status.READY, model.error_message


def test_a_task_the_user_does_not_own_is_refused(owner_client, hate_task, tiny_model_dir):
    from tasks.models import Task

    other = Task.objects.create(name="Not mine", slug="not-mine", config=hate_task.config)
    response = _post(owner_client, other, zip_dir(tiny_model_dir))
    assert response.status_code == 200
    assert not RegisteredModel.objects.exists()


def test_staff_owning_no_task_is_refused(client, django_user_model):
    user = django_user_model.objects.create_user("staff", "s@example.org", "pw", is_staff=True)
    client.force_login(user)
    assert client.get(URL).status_code == 403


def test_endpoint_secret_is_shown_once(owner_client, hate_task):
    response = owner_client.post(
        URL,
        {
            "source": "endpoint",
            "name": "remote",
            "task": hate_task.pk,
            "endpoint_url": "http://127.0.0.1:1/x",
        },
        follow=True,
    )
    model = RegisteredModel.objects.get(name="remote")
    first = response.content.decode()
    assert model.endpoint_secret in first
    again = owner_client.get(reverse("admin:models_registry_registeredmodel_change", args=[model.pk]))
    assert model.endpoint_secret not in again.content.decode()


def test_hub_registration_fails_visibly_offline(owner_client, hate_task, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = owner_client.post(
            URL, {"source": "hub", "name": "hubbed", "task": hate_task.pk, "hub_id": "someone/model"}
        )
    page = owner_client.get(response["Location"]).content.decode()
    assert "the model hub cannot be reached from this machine (HF_HUB_OFFLINE is set)" in page


def test_check_again_requeues_a_failed_model(admin_client, hate_task, django_capture_on_commit_callbacks):
    from models_registry.services import register_hub_model

    with django_capture_on_commit_callbacks(execute=True):
        model = register_hub_model(task=hate_task, name="hubbed", hub_id="someone/model")
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        admin_client.post(
            reverse("admin:models_registry_registeredmodel_changelist"),
            {"action": "check_again", "_selected_action": [model.pk]},
        )
    assert callbacks
    model.refresh_from_db()
    assert model.status == RegisteredModel.Status.FAILED  # still offline


def test_changelist_links_to_the_register_page(owner_client, tiny_registered_model):
    page = owner_client.get(reverse("admin:models_registry_registeredmodel_changelist")).content.decode()
    assert URL in page


def test_a_name_with_a_control_character_is_a_form_error(owner_client, hate_task, tiny_model_dir):
    response = _post(owner_client, hate_task, zip_dir(tiny_model_dir), name="bell\x07model")
    assert response.status_code == 200
    assert response.context["form"].errors["name"] == [
        "The name contains the control character U+0007; use printable characters."
    ]
    assert not RegisteredModel.objects.exists()


def test_the_service_refuses_a_name_with_a_control_character(hate_task, owner, tiny_model_dir):
    from models_registry.services import ModelRegistryError, register_uploaded_model

    with pytest.raises(ModelRegistryError, match=r"control character U\+0007"):
        register_uploaded_model(
            task=hate_task, name="bell\x07model", owner=owner, fileobj=zip_dir(tiny_model_dir), card={}
        )
    assert not RegisteredModel.objects.exists()
