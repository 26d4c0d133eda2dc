"""Who sees which models: published to everyone, unpublished to its owner, task owners and superusers."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser
from django.urls import reverse

from models_registry.models import RegisteredModel
from models_registry.selectors import models_visible_to


@pytest.fixture
def models(hate_task, annotator, owner):
    published = RegisteredModel.objects.create(
        task=hate_task, name="published", owner=annotator, is_published=True
    )
    unpublished = RegisteredModel.objects.create(
        task=hate_task, name="unpublished", owner=annotator, is_published=False
    )
    return published, unpublished


def names(qs) -> list[str]:
    return sorted(m.name for m in qs)


def test_published_models_are_visible_to_everyone(models, outsider):
    assert names(models_visible_to(AnonymousUser())) == ["published"]
    assert names(models_visible_to(None)) == ["published"]
    assert names(models_visible_to(outsider)) == ["published"]


def test_unpublished_models_are_visible_to_their_owner_task_owners_and_superusers(
    models, annotator, owner, django_user_model
):
    admin = django_user_model.objects.create_superuser("root", "root@example.org", "pw")
    for user in (annotator, owner, admin):
        assert names(models_visible_to(user)) == ["published", "unpublished"], user


def test_a_second_task_owner_does_not_duplicate_rows(models, owner, hate_task, django_user_model):
    other = django_user_model.objects.create_user("co-owner", "co@example.org", "pw")
    hate_task.owners.add(other)
    assert models_visible_to(owner).count() == 2


def test_filter_by_task(models, hate_task, outsider):
    from tasks.models import Task

    other = Task.objects.create(name="Other", slug="other", config=hate_task.config)
    RegisteredModel.objects.create(task=other, name="elsewhere", is_published=True)
    assert names(models_visible_to(outsider, task=hate_task)) == ["published"]
    assert names(models_visible_to(outsider, task=other)) == ["elsewhere"]


def test_an_unpublished_id_is_not_found_for_others(models, outsider, annotator):
    from django.http import Http404
    from django.shortcuts import get_object_or_404

    _, unpublished = models
    with pytest.raises(Http404):
        get_object_or_404(models_visible_to(outsider), pk=unpublished.pk)
    assert get_object_or_404(models_visible_to(annotator), pk=unpublished.pk) == unpublished


def test_inactive_owner_sees_only_published(models, annotator):
    annotator.is_active = False
    annotator.save()
    assert names(models_visible_to(annotator)) == ["published"]


def test_a_model_row_is_unpublished_unless_told(hate_task):
    # The field's default agrees with the registration services: nothing is public by accident.
    model = RegisteredModel.objects.create(task=hate_task, name="plain")
    model.refresh_from_db()
    assert model.is_published is False
    assert RegisteredModel._meta.get_field("is_published").default is False


def test_a_task_made_inactive_hides_its_published_models_from_everyone_but_their_people(
    models, hate_task, annotator, owner, outsider, api, client, tiny_registered_model
):
    """The API list and detail, predict and the model page all answer as for an id that does not exist."""
    tiny_registered_model.is_published = True
    tiny_registered_model.save(update_fields=["is_published"])
    hate_task.is_active = False
    hate_task.save(update_fields=["is_active"])
    assert names(models_visible_to(AnonymousUser())) == []
    assert names(models_visible_to(outsider)) == []
    assert names(models_visible_to(annotator)) == ["published", "unpublished"]  # their own models
    assert names(models_visible_to(owner)) == ["published", "tiny-target", "unpublished"]  # the task's owner
    pk = tiny_registered_model.pk
    assert api(outsider).get("/api/models/", {"task": "hate-speech"}).json()["results"] == []
    assert api(outsider).get(f"/api/models/{pk}/").status_code == 404
    body = {"inputs": [{"statement": "hello"}]}
    response = api(outsider).post(f"/api/models/{pk}/predict/", body, format="json")
    assert response.status_code == 404 and response.json() == {"detail": "No such model."}
    assert client.get(reverse("leaderboards:model", args=[pk])).status_code == 404
    assert api(owner).post(f"/api/models/{pk}/predict/", body, format="json").status_code == 200
