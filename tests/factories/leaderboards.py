"""Datasets, their items and scores, written directly (no evaluation runs to make a score)."""

from __future__ import annotations

import factory
from factory.django import DjangoModelFactory

from tests.factories.models_registry import RegisteredModelFactory
from tests.factories.tasks import builtin_task
from tests.helpers.toy_data import LABELS, TEXTS


class DatasetFactory(DjangoModelFactory):
    """A scoring dataset of hate-speech named after its slug in capitals: a round dataset when ``round``
    is given, else static."""

    class Meta:
        model = "leaderboards.Dataset"

    task = factory.LazyFunction(lambda: builtin_task("hate-speech"))
    slug = factory.Sequence(lambda n: f"dataset-{n}")
    name = factory.LazyAttribute(lambda dataset: dataset.slug.upper())
    round = None
    kind = factory.LazyAttribute(lambda dataset: "round" if dataset.round else "static")
    access = "scoring"


class DatasetItemFactory(DjangoModelFactory):
    """An item ``case-<n>`` of ``dataset`` (required)."""

    class Meta:
        model = "leaderboards.DatasetItem"

    dataset = None
    external_id = factory.Sequence(lambda n: f"case-{n}")
    inputs = factory.Sequence(lambda n: {"statement": f"statement number {n}"})
    target = "hateful"


def make_toy_dataset(task, slug: str, *, access: str = "scoring", n: int | None = None):
    """A static test-split dataset ``slug`` of the toy texts (the first ``n``), each item tagged
    ``group:<first word>`` and ``all``; items are bulk-created (no save signal per item)."""
    from leaderboards.models import DatasetItem

    dataset = DatasetFactory(
        task=task, slug=slug, name=slug.title(), kind="static", access=access, split="test"
    )
    rows = list(zip(TEXTS, LABELS, strict=True))[: n or len(TEXTS)]
    DatasetItem.objects.bulk_create(
        DatasetItemFactory.build(
            dataset=dataset,
            external_id=f"case-{i}",
            inputs={"statement": text},
            target=label,
            tags=[f"group:{text.split()[0]}", "all"],
        )
        for i, (text, label) in enumerate(rows)
    )
    return dataset


class ScoreFactory(DjangoModelFactory):
    """A finished score of ``model`` on ``dataset``; the params ``throughput``, ``memory``, ``fairness``,
    ``robustness`` fill ``metrics``, and a param set to None is left out of it."""

    class Meta:
        model = "leaderboards.Score"

    class Params:
        throughput = 100.0
        memory = 1.0
        fairness = 0.9
        robustness = 0.9

    model = factory.SubFactory(RegisteredModelFactory)
    dataset = factory.SubFactory(DatasetFactory)
    status = "done"
    perf = 0.5
    metrics = factory.LazyAttribute(
        lambda score: {
            name: value
            for name, value in (
                ("throughput", score.throughput),
                ("memory", score.memory),
                ("fairness", score.fairness),
                ("robustness", score.robustness),
            )
            if value is not None
        }
    )
