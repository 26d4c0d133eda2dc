"""Gold accuracy (correct / answered per validator and task) and the hold for review at the threshold:
threshold 0.8 and at least 5 answers, so 4 of 5 right (0.8) is not held and 3 of 5 (0.6) is."""

from __future__ import annotations

import pytest

from tasks.models import TaskWorker
from tests.factories.annotation import make_example
from tests.factories.validation import GoldItemFactory, serve_as_gold
from validation.gold.selectors import gold_accuracy, gold_accuracy_table
from validation.services import submit_validation

pytestmark = pytest.mark.django_db


@pytest.fixture
def strict_task(hate_task):
    hate_task.gold_accuracy_threshold = 0.8
    hate_task.gold_min_answers = 5
    hate_task.save(update_fields=["gold_accuracy_threshold", "gold_min_answers"])
    return hate_task


def _answer(golds, validator, right: int):
    """``validator`` answers each of ``golds`` served as gold: the first ``right`` right, the rest wrong."""
    for i, gold in enumerate(golds):
        serve_as_gold(gold, validator)
        submit_validation(
            example=gold.example, validator=validator, verdict="correct" if i < right else "flagged"
        )


def _held(task, user) -> bool:
    return TaskWorker.objects.filter(task=task, user=user, held_at__isnull=False).exists()


@pytest.fixture
def golds(hate_round, annotator):
    return [
        GoldItemFactory(
            example=make_example(hate_round, annotator, status="validated_correct"), verdict="correct"
        )
        for _ in range(5)
    ]


def test_four_of_five_is_at_the_threshold_and_not_held(strict_task, golds, validator):
    _answer(golds, validator, right=4)
    assert not _held(strict_task, validator)
    [record] = gold_accuracy(strict_task)
    assert (record.answered, record.correct, record.accuracy) == (5, 4, 0.8)


def test_three_of_five_is_below_and_held(strict_task, golds, validator):
    _answer(golds[:4], validator, right=3)  # 3/4 = 0.75 but only 4 answers: not yet
    assert not _held(strict_task, validator)
    serve_as_gold(golds[4], validator)
    submit_validation(example=golds[4].example, validator=validator, verdict="incorrect")  # 3/5
    worker = TaskWorker.objects.get(task=strict_task, user=validator)
    assert worker.held_at is not None
    assert "3/5" in worker.held_reason and "80%" in worker.held_reason
    [row] = gold_accuracy_table(strict_task)
    assert row == {
        "validator": "validator",
        "user_id": validator.pk,
        "answered": 5,
        "correct": 3,
        "accuracy": 0.6,
        "held": True,
    }


def test_no_threshold_no_hold(hate_task, golds, validator):
    _answer(golds, validator, right=0)
    assert not _held(hate_task, validator)
    assert gold_accuracy(hate_task)[0].accuracy == 0.0
