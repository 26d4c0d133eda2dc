"""Examples as rows: ``ExampleFactory`` and ``make_example`` (the model verdict chosen by the test).

To have a model score an example, call ``annotation.services.create_example`` instead: it runs the
round's targets and records their predictions.
"""

from __future__ import annotations

import factory
from factory.django import DjangoModelFactory

from tests.factories.accounts import UserFactory


class ExampleFactory(DjangoModelFactory):
    """A pending, model-fooling "hateful" example of ``round`` (required) by a new user, scored OK,
    as the create service would leave it, with no prediction rows."""

    class Meta:
        model = "annotation.Example"

    round = None
    annotator = factory.SubFactory(UserFactory)
    inputs = factory.Sequence(lambda n: {"statement": f"statement number {n}"})
    target = "hateful"
    model_wrong = True
    prediction_status = "ok"


def make_example(round_, annotator, *, model_wrong=True, label="hateful", **fields):
    """A stored example of ``round_`` by ``annotator`` with the model verdict given by the test;
    ``fields`` override any default (``target`` too, for tasks whose target is not a hate-speech label)."""
    return ExampleFactory(
        round=round_, annotator=annotator, **{"model_wrong": model_wrong, "target": label, **fields}
    )
