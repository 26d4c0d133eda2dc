"""What the author alone may do to an example (annotation.services): explain it (at most 2,000
characters), retract it (twice is once) and flag it; nobody else, not even the task's owner. A retracted
example takes no explanation or flag, and a flagged one no second flag (the first reason stays)."""

from __future__ import annotations

import pytest

from annotation.services import (
    ExampleError,
    add_explanation,
    create_example,
    flag_example,
    retract_example,
)


def _create(task, user, statement, label):
    return create_example(task=task, annotator=user, inputs={"statement": statement}, target=label)[0]


@pytest.fixture
def example(hate_task, annotator, rule_model):
    return _create(hate_task, annotator, "go back home", "hateful")


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


def test_a_retracted_example_can_be_neither_explained_nor_flagged(example, annotator):
    retract_example(example=example, user=annotator)
    with pytest.raises(ExampleError, match="retracted"):
        add_explanation(example=example, user=annotator, explanation="after all")
    with pytest.raises(ExampleError, match="retracted"):
        flag_example(example=example, user=annotator, reason="after all")
    example.refresh_from_db()
    assert (example.explanation, example.is_flagged_by_annotator, example.flag_reason) == ("", False, "")


def test_a_second_flag_is_refused_and_keeps_the_first_reason(example, annotator):
    flag_example(example=example, user=annotator, reason="wrong label")
    with pytest.raises(ExampleError, match="already flagged"):
        flag_example(example=example, user=annotator, reason="something else")
    example.refresh_from_db()
    assert example.flag_reason == "wrong label"
