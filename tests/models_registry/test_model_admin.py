"""Admin pages for registered models and round targets."""

from __future__ import annotations

from django.urls import reverse


def test_model_changelist_shows_status_size_and_dev_accuracy(admin_client, tiny_registered_model):
    tiny_registered_model.card = {**tiny_registered_model.card, "dev_accuracy": 0.6464}
    tiny_registered_model.save()
    response = admin_client.get(reverse("admin:models_registry_registeredmodel_changelist"))
    assert response.status_code == 200
    body = response.content.decode()
    assert "tiny-target" in body
    assert "64.6%" in body
    assert "Ready" in body


def test_model_changelist_search_and_filter(admin_client, tiny_registered_model):
    url = reverse("admin:models_registry_registeredmodel_changelist")
    assert "tiny-target" in admin_client.get(url, {"q": "tiny"}).content.decode()
    assert "tiny-target" not in admin_client.get(url, {"status__exact": "failed"}).content.decode()


def test_model_change_page_shows_the_card_read_only(admin_client, tiny_registered_model):
    url = reverse("admin:models_registry_registeredmodel_change", args=[tiny_registered_model.pk])
    body = admin_client.get(url).content.decode()
    assert "<pre" in body and "&quot;preprocessing&quot;" in body
    assert 'name="card"' not in body


def test_round_target_changelist(admin_client, tiny_registered_model):
    response = admin_client.get(reverse("admin:models_registry_roundtarget_changelist"))
    assert response.status_code == 200
    assert "tiny-target" in response.content.decode()


def test_where_a_checked_model_comes_from_cannot_be_edited_even_by_a_superuser(
    admin_client, tiny_registered_model
):
    # Its check vouched for these weights: pointed elsewhere, it stayed "ready" and ranked while every
    # prediction failed ("the model directory has no config.json").
    url = reverse("admin:models_registry_registeredmodel_change", args=[tiny_registered_model.pk])
    body = admin_client.get(url).content.decode()
    for field in ("source", "path", "endpoint_url", "allow_pickle"):
        assert f'name="{field}"' not in body
    assert "register it again" in body
    before = tiny_registered_model.path
    admin_client.post(
        url,
        {
            "name": "tiny-target",
            "task": tiny_registered_model.task_id,
            "path": "/etc",
            "is_published": "on",
            "roundtarget_set-TOTAL_FORMS": "0",
            "roundtarget_set-INITIAL_FORMS": "0",
        },
    )
    tiny_registered_model.refresh_from_db()
    assert tiny_registered_model.path == before


def test_models_come_in_through_register_only(admin_client, hate_task):
    # Django's plain add form stored a folder (any path, pickles allowed) without a check.
    assert admin_client.get("/admin/models_registry/registeredmodel/add/").status_code == 403
    page = admin_client.get(reverse("admin:models_registry_registeredmodel_changelist")).content.decode()
    assert "Register a model" in page and "/admin/models_registry/registeredmodel/add/" not in page
    register = reverse("admin:models_registry_registeredmodel_register")
    assert admin_client.get(register).status_code == 200


def _runtime_cells(body: str) -> list[str]:
    import re

    return re.findall(r'<td class="field-runtime_shown">([^<]*)</td>', body)


def test_a_remote_chat_model_is_never_called_pytorch_in_the_admin_or_the_api(admin_client, admin_user):
    """A remote model's runtime field keeps its default ("torch"), which nothing here runs: the admin's
    column and change page, its runtime filter and the API name what serves it."""
    from tests.factories.models_registry import RegisteredModelFactory
    from tests.factories.tasks import builtin_task
    from tests.helpers.api import forced_client

    red = builtin_task("red-team")
    remote = RegisteredModelFactory(task=red, name="far-chat", source="chat_endpoint", path="")
    local = RegisteredModelFactory(task=red, name="near-chat", source="local_dir", runtime="torch")
    url = reverse("admin:models_registry_registeredmodel_changelist")
    body = admin_client.get(url, {"o": "1"}).content.decode()  # by name: far-chat, near-chat
    assert _runtime_cells(body) == ["remote chat server", "PyTorch"]
    torch_only = admin_client.get(url, {"served_by": "torch"}).content.decode()
    assert "near-chat" in torch_only and "far-chat" not in torch_only
    remote_only = admin_client.get(url, {"served_by": "chat_endpoint"}).content.decode()
    assert "far-chat" in remote_only and "near-chat" not in remote_only
    change = admin_client.get(reverse("admin:models_registry_registeredmodel_change", args=[remote.pk]))
    assert "remote chat server" in change.content.decode()
    assert "PyTorch" not in change.content.decode().split('class="form-row field-runtime_shown"')[1][:400]
    api = forced_client(admin_user)
    assert api.get(f"/api/models/{remote.pk}/").json()["runtime"] is None
    assert api.get(f"/api/models/{local.pk}/").json()["runtime"] == "torch"
