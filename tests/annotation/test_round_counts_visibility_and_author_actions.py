"""Round counts and MER, visibility of examples, the author's explain / retract / flag."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser

from annotation import selectors
from annotation.models import Example
from annotation.services import (
    ExampleError,
    add_explanation,
    create_example,
    flag_example,
    retract_example,
)
from models_registry import inference
from tasks import round_stats
from tasks.services import ensure_round
from tests.helpers.fakes import crashing_predict, rule_predict


def _create(task, user, statement, label):
    return create_example(task=task, annotator=user, inputs={"statement": statement}, target=label)[0]


@pytest.fixture
def small_round(hate_task, annotator, validator, rule_model, monkeypatch):
    """Six examples, by hand: A, B fool the model; C fools it but is retracted; D, E do not fool it;
    F is unscored (the model crashed). Collected = A B D E F = 5, scored = A B D E = 4, model-fooling = 2,
    MER = 2/4 (F, awaiting a model verdict, is in neither numerator nor denominator)."""
    _create(hate_task, annotator, "they should go back home", "hateful")  # A: model says not-hateful
    _create(hate_task, validator, "I hate nothing about them", "not-hateful")  # B: model says hateful
    c = _create(hate_task, annotator, "go back home", "hateful")  # C: fooled, then retracted
    retract_example(example=c, user=annotator)
    _create(hate_task, annotator, "I hate them", "hateful")  # D
    _create(hate_task, validator, "hello world", "not-hateful")  # E
    monkeypatch.setattr(inference, "predict", crashing_predict)
    _create(hate_task, annotator, "nice people", "not-hateful")  # F
    monkeypatch.setattr(inference, "predict", rule_predict)
    return hate_task.current_round


def test_round_counts_and_mer_by_hand(small_round):
    counts = round_stats.round_counts(small_round)
    assert (counts.collected, counts.scored, counts.fooling, counts.unscored) == (5, 4, 2, 1)
    assert counts.mer == pytest.approx(2 / 4)


def test_imported_examples_are_counted_apart_and_stay_out_of_mer(small_round):
    for i, label in enumerate(["hateful", "not-hateful", "hateful"]):
        Example.objects.create(
            round=small_round,
            inputs={"statement": f"imported {i}"},
            target=label,
            source=Example.Source.IMPORTED,
            status=Example.Status.VALIDATED_CORRECT,
            prediction_status=Example.PredictionStatus.NONE,
            external_id=f"imp-{i}",
        )
    counts = round_stats.round_counts(small_round)
    assert (counts.collected, counts.fooling, counts.unscored, counts.imported) == (5, 2, 1, 3)
    assert counts.mer == pytest.approx(2 / 4)


def test_round_counts_for_task_lists_every_round(hate_task, small_round):
    ensure_round(task=hate_task, number=2)
    rows = round_stats.round_counts_for_task(hate_task)
    assert [(r.round.number, r.collected, r.fooling) for r in rows] == [(1, 5, 2), (2, 0, 0)]
    assert rows[1].mer is None


def test_examples_visible_to(hate_task, small_round, annotator, validator, owner, outsider):
    assert selectors.examples_visible_to(annotator).count() == 4  # A, C, D, F (retracted ones too)
    assert selectors.examples_visible_to(validator).count() == 2
    assert selectors.examples_visible_to(owner).count() == 6
    assert selectors.examples_visible_to(outsider).count() == 0
    assert selectors.examples_visible_to(AnonymousUser()).count() == 0


def test_owner_sees_each_example_once_when_the_task_has_several_owners(
    hate_task, small_round, owner, django_user_model
):
    second = django_user_model.objects.create_user(username="second-owner", password="x" * 20)
    hate_task.owners.add(second)
    assert selectors.examples_visible_to(owner).count() == 6


def test_author_explains_retracts_and_flags(hate_task, annotator, rule_model):
    example = _create(hate_task, annotator, "go back home", "hateful")
    add_explanation(example=example, user=annotator, explanation="Implied exclusion\r\nof a group")
    flag_example(example=example, user=annotator, reason="typo in the statement")
    retract_example(example=example, user=annotator)
    retract_example(example=example, user=annotator)  # idempotent
    example.refresh_from_db()
    assert example.explanation == "Implied exclusion\nof a group"
    assert (example.is_flagged_by_annotator, example.flag_reason) == (True, "typo in the statement")
    assert example.is_retracted is True


@pytest.mark.parametrize("action", ["explain", "retract", "flag"])
def test_only_the_author_changes_an_example(hate_task, annotator, owner, outsider, rule_model, action):
    example = _create(hate_task, annotator, "go back home", "hateful")
    for user in (outsider, owner):
        with pytest.raises(ExampleError):
            if action == "explain":
                add_explanation(example=example, user=user, explanation="mine now")
            elif action == "retract":
                retract_example(example=example, user=user)
            else:
                flag_example(example=example, user=user)
    example.refresh_from_db()
    assert (example.explanation, example.is_retracted, example.is_flagged_by_annotator) == ("", False, False)


def test_explanation_too_long_is_refused(hate_task, annotator, rule_model):
    example = _create(hate_task, annotator, "go back home", "hateful")
    with pytest.raises(ExampleError) as info:
        add_explanation(example=example, user=annotator, explanation="x" * 2001)
    assert "explanation" in info.value.errors
