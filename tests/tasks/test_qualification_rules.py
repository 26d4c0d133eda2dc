"""tasks.qualification.check_can_contribute: each rule's code and message, their order, the daily cap at
its boundary (UTC days), the competition limit, the owner exemption; the quiz's scoring by hand."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from django.db import transaction

from annotation.models import Example
from annotation.services import ExampleError, NotQualifiedToWrite, create_example, retract_example
from tasks import qualification
from tasks.qualification import NotQualified, check_can_contribute
from tests.factories.accounts import UserFactory
from tests.factories.annotation import make_example
from tests.factories.qualification import (
    MESSAGES,
    URLS,
    TutorialItemFactory,
    answers,
    make_quiz,
    refuse,
    standing,
)

pytestmark = pytest.mark.django_db


def _refusal(task, user, action="write", **kwargs) -> NotQualified:
    with pytest.raises(NotQualified) as caught:
        check_can_contribute(task, user, action, lock=False, **kwargs)
    return caught.value


@pytest.mark.parametrize("code", qualification.CODES)
def test_each_rule_refuses_with_its_code_message_and_url(code, hate_task, hate_round, annotator):
    refuse(code, hate_task, hate_round, annotator)
    refusal = _refusal(hate_task, annotator)
    assert (refusal.code, refusal.message, refusal.url) == (code, MESSAGES[code], URLS.get(code))


@pytest.mark.parametrize("code", qualification.CODES)
def test_each_rule_refuses_the_create_service_and_stores_nothing(code, hate_task, hate_round, annotator):
    refuse(code, hate_task, hate_round, annotator)
    before = Example.objects.count()
    with pytest.raises(NotQualifiedToWrite) as caught:
        create_example(
            task=hate_task, annotator=annotator, inputs={"statement": "a new one"}, target="hateful"
        )
    assert (caught.value.code, caught.value.errors) == (code, {"__all__": [MESSAGES[code]]})
    assert Example.objects.count() == before


def test_rules_are_tried_in_order(hate_task, hate_round, annotator):
    for code in qualification.CODES:
        refuse(code, hate_task, hate_round, annotator)
    standing(hate_task, annotator, listing="blocked")
    seen = [_refusal(hate_task, annotator).code]
    standing(hate_task, annotator, listing="")
    seen.append(_refusal(hate_task, annotator).code)
    standing(hate_task, annotator, listing="allowed")
    seen.append(_refusal(hate_task, annotator).code)
    qualification.release_hold(task=hate_task, user=annotator)
    seen.append(_refusal(hate_task, annotator).code)
    qualification.mark_tutorial_seen(task=hate_task, user=annotator)
    seen.append(_refusal(hate_task, annotator).code)
    standing(hate_task, annotator, quiz_passed_at=datetime(2026, 1, 1, tzinfo=UTC))
    seen.append(_refusal(hate_task, annotator).code)
    hate_task.daily_example_cap = None
    hate_task.save(update_fields=["daily_example_cap"])
    seen.append(_refusal(hate_task, annotator).code)
    assert seen == list(qualification.CODES)
    hate_round.examples_per_participant = 3  # two written: one for the cap, one for the limit
    hate_round.save(update_fields=["examples_per_participant"])
    assert check_can_contribute(hate_task, annotator, "write", lock=False).listing == "allowed"


def test_validating_needs_no_tutorial_but_the_quiz(hate_task, hate_round, validator):
    TutorialItemFactory(task=hate_task)
    assert check_can_contribute(hate_task, validator, "validate", lock=False) is None  # no row yet
    make_quiz(hate_task)
    assert _refusal(hate_task, validator, "validate").code == "quiz"


def test_owners_and_superusers_are_exempt_from_every_rule(hate_task, hate_round, owner):
    root = UserFactory(username="root", is_staff=True, is_superuser=True)
    for code in qualification.CODES:
        refuse(code, hate_task, hate_round, owner)
    hate_task.daily_example_cap = 0
    hate_task.save(update_fields=["daily_example_cap"])
    standing(hate_task, owner, listing="blocked")
    qualification.hold_for_review(task=hate_task, user=owner, reason="gold accuracy 0.4")
    standing(hate_task, root, listing="blocked")
    qualification.hold_for_review(task=hate_task, user=root, reason="gold accuracy 0.4")
    for user in (owner, root):
        assert check_can_contribute(hate_task, user, "write", lock=False) is None
        example, created = create_example(
            task=hate_task, annotator=user, inputs={"statement": f"by {user.username}"}, target="hateful"
        )
        assert created and example.annotator == user


def test_a_quiz_without_questions_or_inactive_asks_nothing(hate_task, hate_round, annotator):
    quiz = make_quiz(hate_task, n_questions=0)
    assert check_can_contribute(hate_task, annotator, "write", lock=False) is None
    quiz.delete()
    make_quiz(hate_task, is_active=False)
    assert check_can_contribute(hate_task, annotator, "write", lock=False) is None


def test_lock_creates_the_row(hate_task, hate_round, annotator):
    with transaction.atomic():
        worker = check_can_contribute(hate_task, annotator, "write")
    assert worker.pk is not None and (worker.task, worker.user) == (hate_task, annotator)


def test_unknown_action_is_a_value_error(hate_task, annotator):
    with pytest.raises(ValueError):
        check_can_contribute(hate_task, annotator, "delete", lock=False)


# --- the daily cap ---------------------------------------------------------------------------------------


def _write(task, user, text):
    return create_example(task=task, annotator=user, inputs={"statement": text}, target="hateful")


def test_cap_of_two_lets_the_second_through_refuses_the_third_and_opens_the_next_utc_day(
    hate_task, hate_round, annotator
):
    hate_task.daily_example_cap = 2
    hate_task.save(update_fields=["daily_example_cap"])
    _write(hate_task, annotator, "first")
    _write(hate_task, annotator, "second")  # the 2nd is allowed
    with pytest.raises(NotQualifiedToWrite) as caught:
        _write(hate_task, annotator, "third")
    assert caught.value.code == "daily_cap"
    assert caught.value.message == (
        "You have written 2 examples today, this task's daily limit; you can write again after 00:00 UTC."
    )
    assert Example.objects.filter(annotator=annotator).count() == 2
    tomorrow = datetime.now(UTC) + timedelta(days=1)
    assert check_can_contribute(hate_task, annotator, "write", now=tomorrow, lock=False) is not None
    # Once the two are yesterday's, the third goes through.
    Example.objects.filter(annotator=annotator).update(created_at=datetime.now(UTC) - timedelta(days=1))
    example, created = _write(hate_task, annotator, "third")
    assert created and Example.objects.filter(annotator=annotator).count() == 3


def test_the_day_ends_at_midnight_utc_whatever_the_callers_time_zone(hate_task, hate_round, annotator):
    hate_task.daily_example_cap = 1
    hate_task.save(update_fields=["daily_example_cap"])
    example = make_example(hate_round, annotator)
    Example.objects.filter(pk=example.pk).update(created_at=datetime(2026, 3, 10, 23, 30, tzinfo=UTC))
    plus_two = timezone(timedelta(hours=2))
    # 01:59:59 at UTC+2 is 23:59:59 UTC on the 10th: the same UTC day, refused.
    late = datetime(2026, 3, 11, 1, 59, 59, tzinfo=plus_two)
    assert _refusal(hate_task, annotator, now=late).code == "daily_cap"
    assert _refusal(hate_task, annotator, now=datetime(2026, 3, 10, 0, 0, tzinfo=UTC)).code == "daily_cap"
    # 02:00 at UTC+2 is 00:00 UTC on the 11th: a new day.
    assert (
        check_can_contribute(
            hate_task, annotator, "write", now=datetime(2026, 3, 11, 2, 0, tzinfo=plus_two), lock=False
        )
        is None
    )
    # The 9th does not see the 10th's example either.
    assert (
        check_can_contribute(
            hate_task, annotator, "write", now=datetime(2026, 3, 9, 23, 59, tzinfo=UTC), lock=False
        )
        is None
    )


def test_retracted_examples_count_towards_the_cap_imported_ones_do_not(hate_task, hate_round, annotator):
    hate_task.daily_example_cap = 1
    hate_task.save(update_fields=["daily_example_cap"])
    make_example(hate_round, annotator, source="imported")
    assert check_can_contribute(hate_task, annotator, "write", lock=False) is None
    make_example(hate_round, annotator, is_retracted=True)
    assert _refusal(hate_task, annotator).code == "daily_cap"


def test_validation_cap_counts_ordinary_verdicts_of_the_day(hate_task, hate_round, annotator, validator):
    from tests.factories.validation import submit_served
    from validation.services import VerdictError, next_example

    hate_task.daily_validation_cap = 1
    hate_task.save(update_fields=["daily_validation_cap"])
    first, second = make_example(hate_round, annotator), make_example(hate_round, annotator)
    submit_served(example=first, validator=validator, verdict="correct")
    with pytest.raises(VerdictError) as caught:
        submit_served(example=second, validator=validator, verdict="correct")
    assert caught.value.code == "daily_cap" and caught.value.qualification
    assert caught.value.errors == {
        "__all__": [
            "You have validated 1 example today, this task's daily limit; you can validate again after "
            "00:00 UTC."
        ]
    }
    with pytest.raises(VerdictError) as caught:
        next_example(round_=hate_round, validator=validator)
    assert caught.value.code == "daily_cap"
    assert second.validations.count() == 0
    # The cap on verdicts leaves writing alone.
    assert check_can_contribute(hate_task, validator, "write", lock=False).user == validator


def test_gold_answers_count_towards_the_validation_cap_like_votes(
    hate_task, hate_round, annotator, validator
):
    """A gold item looks like any other example to its validator, so answering it uses the day's cap."""
    from tests.factories.validation import GoldItemFactory, serve, serve_as_gold
    from validation.services import VerdictError, submit_validation

    hate_task.daily_validation_cap = 1
    hate_task.save(update_fields=["daily_validation_cap"])
    gold_example = make_example(hate_round, annotator, status="validated_correct")
    gold = GoldItemFactory(example=gold_example)
    serve_as_gold(gold, validator)
    assert submit_validation(example=gold_example, validator=validator, verdict="correct").gold
    other = make_example(hate_round, annotator)
    serve(other, validator)
    with pytest.raises(VerdictError) as caught:
        submit_validation(example=other, validator=validator, verdict="correct")
    assert caught.value.code == "daily_cap"
    assert qualification.validations_cast_today(hate_task, validator, datetime.now(UTC)) == 1


# --- competition mode ------------------------------------------------------------------------------------


def test_competition_round_takes_the_fixed_number_and_refuses_retraction(hate_task, hate_round, annotator):
    hate_round.is_competition = True
    hate_round.examples_per_participant = 2
    hate_round.save(update_fields=["is_competition", "examples_per_participant"])
    first, _ = _write(hate_task, annotator, "one")
    _write(hate_task, annotator, "two")
    with pytest.raises(NotQualifiedToWrite) as caught:
        _write(hate_task, annotator, "three")
    assert caught.value.message == (
        "Round 1 is a competition: each participant writes 2 examples, and you have written 2. Thank you "
        "for taking part."
    )
    with pytest.raises(ExampleError) as caught:
        retract_example(example=first, user=annotator)
    assert caught.value.errors == {
        "__all__": ["Round 1 is a competition: examples written in it cannot be retracted."]
    }
    first.refresh_from_db()
    assert not first.is_retracted
    # Another participant still has their two.
    other = UserFactory(username="other")
    assert _write(hate_task, other, "mine")[1] is True


def test_replayed_rows_are_no_ones_work(hate_task, hate_round, annotator):
    TutorialItemFactory(task=hate_task)
    example, created = create_example(
        task=hate_task,
        annotator=annotator,
        inputs={"statement": "replayed"},
        target="hateful",
        source="replay",
    )
    assert created and example.source == "replay"


# --- the quiz --------------------------------------------------------------------------------------------


def test_quiz_pass_mark_three_quarters_of_four(hate_task, annotator, validator):
    quiz = make_quiz(hate_task, n_questions=4, pass_mark=0.75)
    failed = qualification.submit_quiz(task=hate_task, user=validator, answers=answers(quiz, 2))
    assert (failed.attempt.n_correct, failed.attempt.n_questions, failed.attempt.passed) == (2, 4, False)
    assert [r.correct for r in failed.results] == [True, True, False, False]
    assert hate_task.workers.get(user=validator).quiz_passed_at is None

    passed = qualification.submit_quiz(task=hate_task, user=annotator, answers=answers(quiz, 3))
    assert (passed.attempt.n_correct, passed.attempt.passed) == (3, True)
    assert passed.attempt.answers == {str(q.pk): a for q, a in zip(quiz.questions.all(), "aaab", strict=True)}
    assert hate_task.workers.get(user=annotator).quiz_passed_at is not None
    with pytest.raises(qualification.QuizError):
        qualification.submit_quiz(task=hate_task, user=annotator, answers=answers(quiz, 4))


def test_unknown_and_missing_answers_are_wrong(hate_task, annotator):
    quiz = make_quiz(hate_task, n_questions=4, pass_mark=0.5)
    first, second, *_ = quiz.questions.all()
    result = qualification.submit_quiz(
        task=hate_task, user=annotator, answers={str(first.pk): "a", str(second.pk): "zzz", "999999": "a"}
    )
    assert (result.attempt.n_correct, result.attempt.passed) == (1, False)


@pytest.mark.parametrize(
    ("n_correct", "n_questions", "pass_mark", "expected"),
    [
        (3, 4, 0.75, True),
        (2, 4, 0.75, False),
        (7, 10, 0.7, True),
        (6, 10, 0.7, False),
        (4, 4, 1.0, True),
        (0, 0, 0.5, False),
    ],
)
def test_passes(n_correct, n_questions, pass_mark, expected):
    assert qualification.passes(n_correct, n_questions, pass_mark) is expected


def test_max_attempts_are_enforced(hate_task, annotator):
    quiz = make_quiz(hate_task, n_questions=4, max_attempts=2)
    assert (
        qualification.submit_quiz(task=hate_task, user=annotator, answers=answers(quiz, 0)).attempts_left == 1
    )
    assert (
        qualification.submit_quiz(task=hate_task, user=annotator, answers=answers(quiz, 1)).attempts_left == 0
    )
    with pytest.raises(qualification.QuizError):
        qualification.submit_quiz(task=hate_task, user=annotator, answers=answers(quiz, 4))
    assert quiz.attempts.filter(user=annotator).count() == 2
    refusal = _refusal(hate_task, annotator)
    assert refusal.code == "quiz"
    assert refusal.message == (
        "You have used all 2 attempts at this task's quiz without passing, so you cannot write or validate "
        "here; ask the task's owners if you think this is a mistake."
    )
