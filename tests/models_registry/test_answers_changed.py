"""A registered model stamps ``answers_changed_at`` when what produces its answers changes (its weights
path, server, server model name, runtime or generation settings), and only then: the arena counts a
rating's votes from there (docs/benchmarking.md, "Exposure")."""

from __future__ import annotations

import pytest

from models_registry.models import RegisteredModel
from tasks.models import Task

pytestmark = pytest.mark.django_db


@pytest.fixture
def model(hate_task: Task) -> RegisteredModel:
    created = RegisteredModel.objects.create(task=hate_task, name="m", generation={"temperature": 0.7})
    return RegisteredModel.objects.get(pk=created.pk)


def test_a_change_of_its_answers_is_stamped(model):
    assert model.answers_changed_at is None
    model.is_published = True
    model.name = "renamed"
    model.save()
    assert RegisteredModel.objects.get(pk=model.pk).answers_changed_at is None
    model.generation["temperature"] = 0.0  # changed in place: still seen
    model.save(update_fields=["generation"])
    first = RegisteredModel.objects.get(pk=model.pk).answers_changed_at
    assert first is not None
    model.save()  # nothing changed since
    assert RegisteredModel.objects.get(pk=model.pk).answers_changed_at == first
    model.path = "/elsewhere"
    model.save()
    assert RegisteredModel.objects.get(pk=model.pk).answers_changed_at > first
