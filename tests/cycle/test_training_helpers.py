"""The steps both target trainers (classifier and span) share: the request checks, training into a work
directory swapped into place, and the QA trainer's messages now being the classifier's."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings

from cycle.training.placement import train_into_place
from cycle.training.planning import TargetTrainingError, plan_training
from cycle.training.span import train_qa_target_for_rounds
from engine.training.classifier import TrainingError
from models_registry.models import RegisteredModel
from tasks.services import ensure_builtin_task, ensure_round


def test_plan_checks_name_then_rounds_then_target(hate_task, hate_round):
    ensure_round(task=hate_task, number=2)
    plan = plan_training(hate_task, [2, 1, 2], recipe="quick", name=None, target_round=2, replace=False)
    assert (plan.numbers, plan.name, [r.number for r in plan.rounds], plan.target.number) == (
        [1, 2],
        "minilm-quick-r1-2",
        [1, 2],
        2,
    )
    with pytest.raises(TargetTrainingError, match=r"^give at least one round to train on$"):
        plan_training(hate_task, [], recipe="quick", name=None, target_round=None, replace=False)
    with pytest.raises(TargetTrainingError, match=r"^task hate-speech has no round\(s\) \[7\]$"):
        plan_training(hate_task, [1, 7], recipe="quick", name=None, target_round=None, replace=False)
    with pytest.raises(
        TargetTrainingError, match=r"^task hate-speech has no round 9 to make this model the target of$"
    ):
        plan_training(hate_task, [1], recipe="quick", name=None, target_round=9, replace=False)
    RegisteredModel.objects.create(task=hate_task, name="taken")
    # The name is checked before the rounds: round 7 does not exist, but the name is what is refused.
    with pytest.raises(TargetTrainingError, match="a model named taken already exists"):
        plan_training(hate_task, [7], recipe="quick", name="taken", target_round=None, replace=False)
    assert (
        plan_training(hate_task, [1], recipe="quick", name="taken", target_round=None, replace=True).name
        == "taken"
    )


def test_train_into_place_swaps_and_always_removes_the_work_dir(hate_task):
    seen = []

    def train(work_dir: Path) -> str:
        seen.append(work_dir)
        work_dir.mkdir()
        (work_dir / "weights").write_text("new")
        return "result"

    result, final = train_into_place(hate_task, "m1", train, replace=False)
    assert (result, final) == ("result", Path(settings.DYNABENCH_MODEL_DIR) / "hate-speech" / "m1")
    assert (final / "weights").read_text() == "new"
    assert seen[0].parent == final.parent and seen[0].name.startswith(".m1.training-")
    assert sorted(p.name for p in final.parent.iterdir()) == ["m1"]

    # Replace: the old directory is swapped out whole.
    (final / "old-only").write_text("x")
    train_into_place(hate_task, "m1", train, replace=True)
    assert sorted(p.name for p in final.iterdir()) == ["weights"]

    def failing(work_dir: Path):
        work_dir.mkdir()
        raise TrainingError("only one class in the training data")

    with pytest.raises(TargetTrainingError, match="^only one class in the training data$"):
        train_into_place(hate_task, "m2", failing, replace=False)
    assert sorted(p.name for p in final.parent.iterdir()) == ["m1"]  # no m2, no work directory

    def taken_meanwhile(work_dir: Path):
        RegisteredModel.objects.create(task=hate_task, name="m3")
        return train(work_dir)

    with pytest.raises(TargetTrainingError, match="a model named m3 already exists"):
        train_into_place(hate_task, "m3", taken_meanwhile, replace=False)
    assert sorted(p.name for p in final.parent.iterdir()) == ["m1"]


def test_the_span_trainer_refuses_a_missing_target_round_as_the_classifier_does(db):
    qa = ensure_builtin_task("qa")
    ensure_round(task=qa, number=1)
    with pytest.raises(
        TargetTrainingError, match=r"^task qa has no round 9 to make this model the target of$"
    ):
        train_qa_target_for_rounds(task=qa, rounds=[1], target_round=9)


def test_card_description_names_the_models_pooling():
    from cycle.training.classifier import card_description

    args = {"backbone": "MiniLM", "recipe": "quick", "task_name": "NLI", "rounds": [1, 2]}
    assert card_description(pooling="pair", **args) == (
        "MiniLM with pair pooling (the two texts, e.g. premise and hypothesis, encoded separately and "
        "mean-pooled into u and v) and a classification head on (u, v, |u-v|, u*v), quick recipe, "
        "trained on NLI round(s) 1, 2."
    )
    assert card_description(pooling="mean", **args) == (
        "MiniLM with a mean-pooling classification head, quick recipe, trained on NLI round(s) 1, 2."
    )
    with pytest.raises(ValueError, match="unknown pooling 'max'"):
        card_description(pooling="max", **args)
