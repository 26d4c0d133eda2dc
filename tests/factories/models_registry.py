"""Registered models: ``RegisteredModelFactory`` rows, weightless stand-ins made round targets, and real
model folders registered and made a round's target through the services."""

from __future__ import annotations

import factory
from factory.django import DjangoModelFactory

from tests.factories.tasks import builtin_task


class RegisteredModelFactory(DjangoModelFactory):
    """A ready, published model ``model-<n>`` of hate-speech with no files (nothing loads it)."""

    class Meta:
        model = "models_registry.RegisteredModel"

    task = factory.LazyFunction(lambda: builtin_task("hate-speech"))
    name = factory.Sequence(lambda n: f"model-{n}")
    status = "ready"
    is_published = True


def stand_in(task, name: str, status: str = "ready"):
    """A registered model with no weights at ``/nonexistent/<name>``, unpublished as the field's default
    (tests monkeypatch ``inference.predict`` where it runs)."""
    return RegisteredModelFactory(
        task=task, name=name, path=f"/nonexistent/{name}", status=status, is_published=False
    )


def make_stand_in(task, round_, name: str = "stand-in", *, published: bool = True):
    """A ready registered model with no weights, made the round's only target (through the service);
    published unless told (a round target is on the leaderboard; the field's default is unpublished)."""
    from models_registry.round_targets import set_round_targets

    model = RegisteredModelFactory(
        task=task, name=name, path="/nonexistent/stand-in", status="ready", is_published=published
    )
    set_round_targets(round=round_, models=[model])
    return model


def registered_target(*, task, round_, name: str, path, description: str):
    """Register the model folder ``path`` through the service (checked, so it must be ``ready``) and make
    it ``round_``'s only target."""
    from models_registry.round_targets import set_round_targets
    from models_registry.services import register_local_model

    model = register_local_model(task=task, name=name, path=str(path), card={"description": description})
    assert model.status == model.Status.READY, model.error_message
    set_round_targets(round=round_, models=[model])
    return model
