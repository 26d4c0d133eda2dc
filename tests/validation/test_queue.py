"""The validation queue: each rule of docs/domain.md, "Validation queue", in isolation, ordering,
and claims."""

from __future__ import annotations

import random
from collections import Counter
from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import Example
from tasks.services import ensure_round
from tests.factories.annotation import make_example
from tests.factories.validation import ValidationFactory
from tests.helpers.rows_read import example_rows_read
from validation import selectors
from validation.models import Validation, ValidationClaim
from validation.services import VerdictError, next_example, submit_validation


def _served(round_, user):
    return next_example(round_=round_, validator=user)


def test_a_fooling_example_by_someone_else_is_served(hate_round, annotator, validator):
    example = make_example(hate_round, annotator)
    assert _served(hate_round, validator) == example
    claim = ValidationClaim.objects.get()
    assert (claim.example, claim.validator) == (example, validator)


def test_own_example_is_not_served(hate_round, annotator):
    make_example(hate_round, annotator)
    assert _served(hate_round, annotator) is None
    summary = selectors.queue_summary(hate_round, annotator)
    assert (summary.open, summary.own, summary.judged, summary.claimed) == (1, 1, 0, 0)


def test_example_already_validated_by_requester_is_not_served(hate_round, annotator, validator):
    example = make_example(hate_round, annotator)
    ValidationFactory(example=example, validator=validator, verdict="correct")
    assert _served(hate_round, validator) is None
    assert selectors.queue_summary(hate_round, validator).judged == 1


def test_retracted_example_is_not_served(hate_round, annotator, validator):
    make_example(hate_round, annotator, is_retracted=True)
    assert _served(hate_round, validator) is None
    assert selectors.queue_summary(hate_round, validator).open == 0


@pytest.mark.parametrize("status", ["validated_correct", "validated_incorrect", "flagged"])
def test_settled_example_is_not_served(hate_round, annotator, validator, status):
    make_example(hate_round, annotator, status=status)
    assert _served(hate_round, validator) is None


def test_imported_example_is_never_served(hate_round, validator):
    make_example(hate_round, None, source=Example.Source.IMPORTED, status="validated_correct")
    make_example(hate_round, None, source=Example.Source.IMPORTED)  # even one left pending by mistake
    assert _served(hate_round, validator) is None


def test_example_of_another_round_is_not_served(hate_task, hate_round, annotator, validator):
    other = ensure_round(task=hate_task, number=2)
    make_example(other, annotator)
    assert _served(hate_round, validator) is None
    assert _served(other, validator) is not None


def test_non_fooling_examples_are_served_only_if_the_task_says_so(
    hate_task, hate_round, annotator, validator
):
    not_fooling = make_example(hate_round, annotator, model_wrong=False)
    make_example(hate_round, annotator, model_wrong=None, prediction_status="failed")
    assert _served(hate_round, validator) is None

    hate_task.config = {**hate_task.config, "validate_non_fooling": True}
    hate_task.save()
    hate_round.refresh_from_db()
    served = {_served(hate_round, validator).pk}
    Validation.objects.create(example_id=served.copy().pop(), validator=validator, verdict="correct")
    served.add(_served(hate_round, validator).pk)
    assert not_fooling.pk in served and len(served) == 2


def test_fewest_validations_first(hate_round, annotator, validator, crowd):
    twice = make_example(hate_round, annotator)
    once = make_example(hate_round, annotator)
    never = make_example(hate_round, annotator)
    for e, voters in ((twice, crowd[:2]), (once, crowd[:1])):
        for v in voters:
            ValidationFactory(example=e, validator=v, verdict="correct")
    order = []
    for _ in range(3):
        e = _served(hate_round, validator)
        order.append(e)
        ValidationFactory(example=e, validator=validator, verdict="correct")
    assert order == [never, once, twice]


def test_random_among_equals(hate_round, annotator, validator):
    examples = [make_example(hate_round, annotator) for _ in range(4)]
    firsts = Counter()
    for _ in range(40):
        ValidationClaim.objects.all().delete()
        firsts[_served(hate_round, validator).pk] += 1
    # 40 draws among 4 equals: all four showing up is near certain (miss chance < 4 * 0.75**40 ~ 4e-5).
    assert set(firsts) == {e.pk for e in examples}


def test_asking_again_returns_the_same_claimed_example(hate_round, annotator, validator):
    make_example(hate_round, annotator)
    make_example(hate_round, annotator)
    first = _served(hate_round, validator)
    assert _served(hate_round, validator) == first
    assert ValidationClaim.objects.filter(validator=validator).count() == 1


def test_two_validators_get_different_examples(hate_round, annotator, validator, outsider):
    a, b = make_example(hate_round, annotator), make_example(hate_round, annotator)
    served = {_served(hate_round, validator), _served(hate_round, outsider)}
    assert served == {a, b}


def test_a_claimed_example_is_not_served_to_another_while_the_claim_lives(
    hate_round, annotator, validator, outsider
):
    example = make_example(hate_round, annotator)
    assert _served(hate_round, validator) == example
    assert _served(hate_round, outsider) is None
    summary = selectors.queue_summary(hate_round, outsider)
    assert (summary.open, summary.claimed) == (1, 1)


def test_an_expired_claim_is_taken_over(hate_round, annotator, validator, outsider):
    example = make_example(hate_round, annotator)
    assert _served(hate_round, validator) == example
    ValidationClaim.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    assert _served(hate_round, outsider) == example
    claim = ValidationClaim.objects.get()
    assert claim.validator == outsider and claim.expires_at > timezone.now()


def test_claim_lifetime_comes_from_the_setting(settings, hate_round, annotator, validator):
    settings.DYNABENCH_VALIDATION_CLAIM_SECONDS = 30
    make_example(hate_round, annotator)
    before = timezone.now()
    _served(hate_round, validator)
    lifetime = ValidationClaim.objects.get().expires_at - before
    assert timedelta(seconds=29) < lifetime <= timedelta(seconds=31)


def test_a_verdict_releases_the_claim(hate_round, annotator, validator):
    example = make_example(hate_round, annotator)
    _served(hate_round, validator)
    submit_validation(example=example, validator=validator, verdict="correct")
    assert not ValidationClaim.objects.exists()


def test_blocked_user_is_not_served(hate_round, annotator, outsider):
    make_example(hate_round, annotator)
    outsider.is_blocked = True
    outsider.save()
    with pytest.raises(VerdictError) as exc:
        _served(hate_round, outsider)
    assert exc.value.code == "blocked"


def _grown_round(round_, annotator, more: int = 2000) -> None:
    """``round_`` with one open example by ``annotator`` and ``more`` like it, written in one statement:
    PostgreSQL has not analyzed the table since (a new table never was), as a round written 25 a second
    outruns autovacuum."""
    template = make_example(round_, annotator)
    Example.objects.bulk_create(
        Example(
            round=template.round,
            context=template.context,
            annotator=annotator,
            inputs={"statement": f"open example {n}"},
            target=template.target,
            model_wrong=template.model_wrong,
            status=template.status,
        )
        for n in range(more)
    )


def test_the_held_claim_is_found_without_reading_the_round(hate_round, annotator, validator):
    # Asked on every request for the next example, in a round grown faster than it is analyzed.
    _grown_round(hate_round, annotator)
    served = _served(hate_round, validator)
    before = example_rows_read()
    claim = selectors.live_claim_of(hate_round, validator)
    read = example_rows_read() - before
    assert claim is not None and claim.example == served
    assert read <= 2, f"{read} example rows read for one held claim (2,001 open examples)"
    # Still the rule: a claim whose example was settled meanwhile is no live claim, nor one in another round.
    assert selectors.live_claim_of(ensure_round(task=hate_round.task, number=2), validator) is None
    Example.objects.filter(pk=served.pk).update(status="validated_correct")
    assert selectors.live_claim_of(hate_round, validator) is None


def test_the_next_example_is_found_without_reading_the_round(hate_round, annotator, validator, crowd):
    # 2,001 open examples, not analyzed, the 5 oldest validated once: a fresh one is served after reading
    # a few example rows, not the round (ordering the whole queue by count reads every open example).
    _grown_round(hate_round, annotator)
    once = list(Example.objects.filter(round=hate_round).order_by("pk")[:5])
    for example in once:
        ValidationFactory(example=example, validator=crowd[0], verdict="correct")
    before = example_rows_read()
    served = _served(hate_round, validator)
    read = example_rows_read() - before
    assert served is not None and served not in once
    assert read <= 40, f"{read} example rows read to serve one example (2,001 open)"


def test_the_queue_falls_back_to_the_fewest_validations_when_every_example_has_one(
    hate_round, annotator, validator, crowd
):
    # No example is fresh: the one with one validation comes before those with two, whichever id is drawn.
    twice = [make_example(hate_round, annotator) for _ in range(3)]
    once = make_example(hate_round, annotator)
    for example in twice:
        for voter in crowd[:2]:
            ValidationFactory(example=example, validator=voter, verdict="correct")
    ValidationFactory(example=once, validator=crowd[0], verdict="correct")
    for _ in range(10):
        ValidationClaim.objects.all().delete()
        assert _served(hate_round, validator) == once


def test_fresh_examples_after_many_validated_ones_are_served_at_random(hate_round, annotator, crowd):
    # A round being written: the old examples validated once, the new ones fresh. Walking ids from a random
    # one served the first fresh example after the validated ones 162 times in 200; random keys spread
    # them. Seeded: the keys and the draws are the same every run.
    random.seed(20261207)
    for example in [make_example(hate_round, annotator) for _ in range(100)]:
        ValidationFactory(example=example, validator=crowd[0], verdict="correct")
    fresh = {make_example(hate_round, annotator).pk for _ in range(20)}
    served = Counter()
    for _ in range(200):
        ValidationClaim.objects.all().delete()
        served[_served(hate_round, crowd[1]).pk] += 1
    assert set(served) <= fresh
    # 20 examples, 10 asks each on average: each one's chance is its gap of keys (about 1/20 each, spread
    # as an exponential), so most come up and none takes a third of the asks.
    assert len(served) >= 16, served
    assert max(served.values()) <= 60, served
