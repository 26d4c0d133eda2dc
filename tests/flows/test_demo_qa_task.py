"""The demo's QA module lays out round 1 (SQuAD) closed and round 2 open on the test articles' passages.

The target is stood in by a tiny span model registered under the demo's name (training is tested in
test_qa_target_training); the real SQuAD file is imported by the module's own import step.
"""

from __future__ import annotations

import pytest

from annotation.models import Example
from demo.demo_tasks.base import lay_out_task, model_name
from demo.demo_tasks.qa import DEMO_TASK as QA_DEMO
from tasks.models import Context
from tasks.services import ensure_builtin_task
from tests.helpers.data import data_path
from tests.helpers.tiny_qa import build_tiny_qa_model

pytestmark = pytest.mark.django_db(transaction=True)


def test_round_2_opens_on_the_held_apart_articles_once(tmp_path, settings):
    data_path(settings, "squad")
    from models_registry.services import register_local_model

    task = ensure_builtin_task("qa")
    name = model_name((1,), "quick")
    model = register_local_model(
        task=task, name=name, path=str(build_tiny_qa_model(tmp_path / name)), card={}
    )
    assert model.status == model.Status.READY, model.error_message

    task, report = lay_out_task(QA_DEMO, recipe="quick", log=lambda _: None)
    assert report.trained == [] and task.current_round.number == 2
    assert [r.is_closed for r in task.rounds.order_by("number")] == [True, False]
    assert report.models == {1: name, 2: name}
    opened = Context.objects.filter(round=task.current_round)
    test_titles = set(
        Example.objects.filter(round__task=task, round__number=1, split="test").values_list(
            "context__data__title", flat=True
        )
    )
    assert len(test_titles) == 10
    assert {c.data["title"] for c in opened} == test_titles
    train_passages = set(
        Example.objects.filter(round__task=task, split="train").values_list(
            "context__data__context", flat=True
        )
    )
    assert not train_passages & {c.data["context"] for c in opened}  # no training passage is served

    again_task, again = lay_out_task(QA_DEMO, recipe="quick", log=lambda _: None)
    assert again.trained == [] and again_task.current_round == task.current_round
    assert Context.objects.filter(round=task.current_round).count() == opened.count()
