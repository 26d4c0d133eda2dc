"""The demo modules of sentiment and NLI lay out their rounds once, with contexts for the open round.

The targets are stood in by tiny models registered under the demo's names (training is tested
elsewhere); the real data is imported by the modules' own import step.
"""

from __future__ import annotations

import pytest

from demo.demo_tasks.base import lay_out_task, model_name
from demo.demo_tasks.nli import DEMO_TASK as NLI_DEMO
from demo.demo_tasks.sentiment import DEMO_TASK as SENTIMENT_DEMO
from tasks.models import Context
from tasks.services import ensure_builtin_task
from tests.helpers.data import data_path
from tests.helpers.tiny_models import build_tiny_classifier

pytestmark = pytest.mark.django_db(transaction=True)


def _stand_ins(spec, labels, tmp_path):
    from models_registry.services import register_local_model

    task = ensure_builtin_task(spec.slug)
    for rounds in set(spec.target_training_rounds.values()):
        name = model_name(rounds, "quick")
        path = build_tiny_classifier(tmp_path / spec.slug / name, labels=labels)
        register_local_model(task=task, name=name, path=str(path), card={})
    return task


@pytest.mark.parametrize(
    ("spec", "labels", "source_round"),
    [
        (SENTIMENT_DEMO, ("positive", "negative", "neutral"), 2),
        (NLI_DEMO, ("entailment", "neutral", "contradiction"), 3),
    ],
    ids=["sentiment", "nli"],
)
def test_rounds_are_laid_out_once_with_contexts_for_the_open_round(
    spec, labels, source_round, tmp_path, settings
):
    data_path(settings, "anli")
    task = _stand_ins(spec, labels, tmp_path)
    task, report = lay_out_task(spec, recipe="quick", log=lambda _: None)
    assert report.trained == [] and task.current_round.number == spec.open_round
    rounds = list(task.rounds.order_by("number"))
    assert [r.is_closed for r in rounds] == [True] * (spec.open_round - 1) + [False]
    assert report.models[spec.open_round] == model_name(spec.target_training_rounds[spec.open_round], "quick")
    source = Context.objects.filter(round__task=task, round__number=source_round)
    opened = Context.objects.filter(round=task.current_round)
    assert opened.count() == source.count() > 0
    assert set(opened.values_list("external_id", flat=True)) == set(
        source.values_list("external_id", flat=True)
    )

    # A second run adds nothing and keeps the layout.
    again_task, again = lay_out_task(spec, recipe="quick", log=lambda _: None)
    assert again.trained == [] and again_task.current_round == task.current_round
    assert Context.objects.filter(round=task.current_round).count() == opened.count()
