"""Submitting verdicts: quorum, owner mode, and every refusal."""

from __future__ import annotations

import pytest

from annotation.models import Example
from annotation.services import settle_example
from tests.factories.annotation import make_example
from tests.factories.validation import submit_served
from validation.models import Validation
from validation.services import VerdictError


def _vote(example, user, verdict="correct", **kw):
    """A verdict by ``user`` on ``example`` served to them first (owner verdicts need no serving)."""
    return submit_served(example=example, validator=user, verdict=verdict, **kw)


def _status(example):
    example.refresh_from_db()
    return example.status


@pytest.fixture
def example(hate_round, annotator):
    return make_example(hate_round, annotator)


def test_three_matching_verdicts_settle(example, validator, crowd):
    first = _vote(example, validator)
    second = _vote(example, crowd[0])
    assert (first.settled, second.settled, _status(example)) == (False, False, "pending")
    third = _vote(example, crowd[1])
    assert (third.settled, third.status, _status(example)) == (True, "validated_correct", "validated_correct")


@pytest.mark.parametrize(
    ("verdict", "status"), [("incorrect", "validated_incorrect"), ("flagged", "flagged")]
)
def test_quorum_of_other_verdicts(example, crowd, validator, verdict, status):
    for user in (validator, *crowd[:2]):
        _vote(example, user, verdict)
    assert _status(example) == status


def test_two_against_one_stays_pending(example, validator, crowd):
    _vote(example, validator, "correct")
    _vote(example, crowd[0], "correct")
    _vote(example, crowd[1], "incorrect")
    assert _status(example) == "pending"


def test_mixed_verdicts_settle_when_one_verdict_reaches_quorum(example, validator, crowd, make_user):
    # correct, incorrect, flagged, incorrect, correct: no verdict has three yet.
    voters = [validator, *crowd, make_user("v4")]
    for user, verdict in zip(
        voters, ["correct", "incorrect", "flagged", "incorrect", "correct"], strict=True
    ):
        assert _vote(example, user, verdict).settled is False
    assert _status(example) == "pending"
    assert _vote(example, make_user("v5"), "incorrect").settled is True
    assert _status(example) == "validated_incorrect"
    assert example.validations.count() == 6


def test_task_quorum_setting_is_used(hate_task, example, validator):
    hate_task.validation_quorum = 1
    hate_task.save()
    assert _vote(example, validator, "flagged").settled is True
    assert _status(example) == "flagged"


def test_late_vote_is_refused_and_changes_nothing(example, validator, crowd, make_user):
    for user in (validator, *crowd[:2]):
        _vote(example, user)
    with pytest.raises(VerdictError) as exc:
        _vote(example, crowd[2], "incorrect")
    assert exc.value.code == "settled"
    assert (_status(example), example.validations.count()) == ("validated_correct", 3)


def test_owner_verdict_settles_at_once(example, owner):
    outcome = _vote(example, owner, "incorrect", owner_mode=True, corrected_label="not-hateful")
    assert (outcome.settled, _status(example)) == (True, "validated_incorrect")
    v = Validation.objects.get()
    assert (v.is_owner_verdict, v.corrected_label) == (True, "not-hateful")


def test_owner_verdict_is_a_new_row_beside_the_owners_earlier_vote(example, owner, validator):
    earlier = _vote(example, owner, "correct").validation
    _vote(example, validator, "correct")
    outcome = _vote(example, owner, "flagged", owner_mode=True)
    assert (outcome.settled, _status(example)) == (True, "flagged")
    assert outcome.validation.pk != earlier.pk
    assert list(
        example.validations.order_by("id").values_list("validator", "verdict", "is_owner_verdict")
    ) == [
        (owner.pk, "correct", False),
        (validator.pk, "correct", False),
        (owner.pk, "flagged", True),
    ]


def test_owner_mode_settles_a_non_fooling_example(hate_round, annotator, owner):
    example = make_example(hate_round, annotator, model_wrong=False)
    assert _vote(example, owner, "correct", owner_mode=True).settled is True


def test_non_owner_cannot_use_owner_mode(example, validator):
    with pytest.raises(VerdictError) as exc:
        _vote(example, validator, owner_mode=True)
    assert exc.value.code == "not_owner"
    assert not Validation.objects.exists() and _status(example) == "pending"


def test_cannot_validate_own_example(example, annotator):
    with pytest.raises(VerdictError) as exc:
        _vote(example, annotator)
    assert exc.value.code == "own_example"


def test_cannot_validate_twice(example, validator):
    _vote(example, validator)
    with pytest.raises(VerdictError) as exc:
        _vote(example, validator, "incorrect")
    assert exc.value.code == "already_validated"
    assert list(example.validations.values_list("verdict", flat=True)) == ["correct"]


def test_cannot_validate_retracted(example, validator):
    Example.objects.filter(pk=example.pk).update(is_retracted=True)
    with pytest.raises(VerdictError) as exc:
        _vote(example, validator)
    assert exc.value.code == "retracted"


def test_non_fooling_example_is_not_open(hate_round, annotator, validator):
    example = make_example(hate_round, annotator, model_wrong=False)
    with pytest.raises(VerdictError) as exc:
        _vote(example, validator)
    assert exc.value.code == "not_open"


def test_imported_example_is_settled_already(hate_round, validator):
    example = make_example(hate_round, None, source="imported", status="validated_correct")
    with pytest.raises(VerdictError) as exc:
        _vote(example, validator)
    assert exc.value.code == "settled"


def test_unknown_verdict(example, validator):
    with pytest.raises(VerdictError) as exc:
        _vote(example, validator, "maybe")
    assert exc.value.code == "invalid" and "verdict" in exc.value.errors


@pytest.mark.parametrize(
    ("verdict", "label", "message"),
    [
        ("incorrect", "spam", "Choose one of: hateful, not-hateful."),
        ("correct", "not-hateful", "Only an 'incorrect' verdict takes a corrected label."),
        ("incorrect", "hateful", "The corrected label is the label the author chose."),
    ],
)
def test_corrected_label_rules(example, validator, verdict, label, message):
    with pytest.raises(VerdictError) as exc:
        _vote(example, validator, verdict, corrected_label=label)
    assert exc.value.errors == {"corrected_label": [message]}


def test_reason_too_long(example, validator):
    with pytest.raises(VerdictError) as exc:
        _vote(example, validator, reason="x" * 2001)
    assert "reason" in exc.value.errors


def test_reason_keeps_rtl_and_emoji_and_normalises_newlines(example, validator):
    _vote(example, validator, "flagged", reason="مرحبا 👩🏽‍💻\r\nsecond line")
    assert Validation.objects.get().reason == "مرحبا 👩🏽‍💻\nsecond line"


@pytest.mark.parametrize("how", ["blocked", "inactive"])
def test_blocked_user_cannot_validate(example, outsider, how):
    setattr(outsider, "is_blocked" if how == "blocked" else "is_active", how == "blocked")
    outsider.save()
    with pytest.raises(VerdictError) as exc:
        _vote(example, outsider)
    assert exc.value.code == "blocked"


def test_settle_example_transitions_only_from_pending(example):
    assert settle_example(example.pk, "validated_correct") is True
    assert settle_example(example.pk, "flagged") is False
    assert _status(example) == "validated_correct"
    with pytest.raises(ValueError):
        settle_example(example.pk, "pending")
