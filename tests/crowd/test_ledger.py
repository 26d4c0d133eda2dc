"""The pay ledger: rows per event with hand-computed amounts, the required amounts as a cap, bonuses and
their reversal when an owner overturns a verdict, retraction, idempotent recount, double submissions."""

from __future__ import annotations

import uuid
from datetime import timedelta
from decimal import Decimal

import pytest
from django.core.management import call_command

from annotation.models import Example
from annotation.services import NotQualifiedToWrite, create_example, retract_example
from crowd import ledger, services
from crowd.models import LedgerEntry, Participation
from crowd.selectors import progress_of
from tests.factories.accounts import UserFactory
from tests.factories.annotation import make_example
from tests.factories.crowd import enter_as
from tests.factories.validation import submit_served
from validation.services import overturn_verdict

pytestmark = pytest.mark.django_db

FOOLING = "I love you"  # the stand-in answers not-hateful; the author says hateful: model-fooling


def _write(task, user, text=FOOLING, **kwargs):
    example, _ = create_example(
        task=task, annotator=user, inputs={"statement": text}, target="hateful", **kwargs
    )
    return example


def _rows(worker=None):
    qs = LedgerEntry.objects.order_by("id")
    if worker is not None:
        qs = qs.filter(worker=worker)
    return [(r.event_key, r.amount) for r in qs]


def _quorum(example, verdict="correct"):
    for _ in range(3):
        submit_served(example=example, validator=UserFactory(), verdict=verdict)


@pytest.fixture
def participant(study):
    return enter_as(study, "pid-1").user


def test_each_event_is_paid_under_the_running_participation_up_to_the_required_amounts(
    hate_task, rule_model, study, participant, annotator
):
    e1, e2, e3 = (_write(hate_task, participant, f"{FOOLING} {n}") for n in (1, 2, 3))
    others = [make_example(study.round, annotator) for _ in range(2)]
    v1 = submit_served(example=others[0], validator=participant, verdict="correct").validation
    submit_served(example=others[1], validator=participant, verdict="correct")
    # Two examples and one validation make a submission; the third example and second verdict are extra.
    assert _rows(participant) == [
        (f"example:{e1.pk}", Decimal("0.5000")),
        (f"example:{e2.pk}", Decimal("0.5000")),
        (f"validation:{v1.pk}", Decimal("0.1000")),
    ]
    assert not LedgerEntry.objects.filter(event_key=f"example:{e3.pk}").exists()
    _quorum(e1)  # verified model-fooling: the bonus goes to the author
    _quorum(e2, "incorrect")  # not verified: no bonus
    participation = Participation.objects.get(user=participant)
    services.complete(participation=participation)
    rows = _rows(participant)
    assert rows[3:] == [
        (f"bonus:{e1.pk}:1", Decimal("0.2500")),
        (f"reward:{participation.pk}", Decimal("1.0000")),
    ]
    assert sum(amount for _, amount in rows) == Decimal("2.35")  # 0.50 + 0.50 + 0.10 + 0.25 + 1.00
    assert {r.currency for r in LedgerEntry.objects.all()} == {"GBP"}
    # The validators of the quorum were in no study: nobody else is paid.
    assert set(LedgerEntry.objects.values_list("worker", flat=True)) == {participant.pk}


def test_work_outside_any_study_is_not_paid(hate_task, rule_model, study, annotator):
    _write(hate_task, annotator)
    assert LedgerEntry.objects.count() == 0


def test_work_after_the_time_limit_is_refused_and_not_paid(hate_task, rule_model, study, participant):
    Participation.objects.update(started_at=Participation.objects.get().started_at - timedelta(minutes=61))
    # Refused (crowd/contribution.py: nothing is recorded that the ledger would not pay), nothing stored.
    with pytest.raises(NotQualifiedToWrite) as refused:
        _write(hate_task, participant)
    assert refused.value.code == "study"
    assert Example.objects.count() == 0
    assert LedgerEntry.objects.count() == 0
    assert Participation.objects.get().status == "active"  # decided lazily elsewhere; here only refused
    # An example stored past the limit without the create service (a factory row here) is not paid either.
    late = make_example(study.round, participant)
    assert ledger.reconcile_example(late) == 0


def test_a_double_click_is_one_example_and_one_row(hate_task, rule_model, study, participant):
    token = uuid.uuid4()
    first = _write(hate_task, participant, client_token=token)
    again = _write(hate_task, participant, client_token=token)
    assert first.pk == again.pk
    assert _rows() == [(f"example:{first.pk}", Decimal("0.5000"))]
    assert ledger.reconcile_example(first) == 0


def test_a_retracted_example_has_its_base_pay_reversed_once(hate_task, rule_model, study, participant):
    example = _write(hate_task, participant)
    retract_example(example=example, user=participant)
    retract_example(example=example, user=participant)
    assert _rows() == [
        (f"example:{example.pk}", Decimal("0.5000")),
        (f"reversal:example:{example.pk}", Decimal("-0.5000")),
    ]
    assert progress_of(Participation.objects.get()).examples == 0  # it must be written again


def test_an_owner_overturning_a_verified_example_reverses_its_bonus(
    hate_task, rule_model, study, participant, owner
):
    example = _write(hate_task, participant)
    _quorum(example)
    overturn_verdict(example=example, owner=owner, verdict="incorrect")
    assert _rows() == [
        (f"example:{example.pk}", Decimal("0.5000")),
        (f"bonus:{example.pk}:1", Decimal("0.2500")),
        (f"reversal:bonus:{example.pk}:1", Decimal("-0.2500")),
    ]
    assert ledger.reconcile_example(example) == 0


def test_an_owner_overturning_a_rejected_example_adds_its_bonus(
    hate_task, rule_model, study, participant, owner
):
    example = _write(hate_task, participant)
    _quorum(example, "incorrect")
    assert LedgerEntry.objects.filter(kind="bonus").count() == 0
    outcome = overturn_verdict(example=example, owner=owner, verdict="correct")
    assert (outcome.settled, outcome.status) == (True, "validated_correct")
    assert _rows()[1:] == [(f"bonus:{example.pk}:1", Decimal("0.2500"))]


def test_reconcile_follows_a_status_that_goes_back_and_forth(hate_task, rule_model, study, participant):
    """The reconciliation compares the desired bonus count with bonus rows minus reversals, so each change
    of status adds the next numbered row (bonus:1, reversal:1, bonus:2)."""
    from annotation.models import Example

    example = _write(hate_task, participant)
    for status in ("validated_correct", "validated_incorrect", "validated_correct"):
        Example.objects.filter(pk=example.pk).update(status=status)
        ledger.reconcile_example(example)
    assert [key for key, _ in _rows()][1:] == [
        f"bonus:{example.pk}:1",
        f"reversal:bonus:{example.pk}:1",
        f"bonus:{example.pk}:2",
    ]


def test_recount_rebuilds_missing_rows_and_a_second_run_adds_nothing(
    hate_task, rule_model, study, participant, annotator, capsys
):
    e1, e2 = _write(hate_task, participant, "a"), _write(hate_task, participant, "b")
    validation = submit_served(
        example=make_example(study.round, annotator), validator=participant, verdict="flagged"
    ).validation
    _quorum(e1)
    services.complete(participation=Participation.objects.get())
    expected = _rows()
    assert [key for key, _ in expected] == [
        f"example:{e1.pk}",
        f"example:{e2.pk}",
        f"validation:{validation.pk}",
        f"bonus:{e1.pk}:1",
        f"reward:{Participation.objects.get().pk}",
    ]
    LedgerEntry.objects.all().delete()
    call_command("recount_ledger")
    assert sorted(_rows()) == sorted(expected)
    assert "added 5 ledger row(s)" in capsys.readouterr().out
    call_command("recount_ledger")
    assert "added 0 ledger row(s)" in capsys.readouterr().out
    assert LedgerEntry.objects.count() == 5


def test_a_verdict_on_a_gold_item_is_paid_and_counted_like_any_verdict(study, participant, annotator, owner):
    """Pay and progress must not reveal which items were gold."""
    from validation.gold.services import mark_gold
    from validation.models import GoldAnswer

    item = mark_gold(
        task=study.round.task, example=make_example(study.round, annotator), verdict="correct", by=owner
    )
    answer = GoldAnswer.objects.create(
        gold=item, validator=participant, verdict="correct", is_correct=True, round=study.round
    )
    assert _rows() == [(f"gold:{answer.pk}", Decimal("0.1000"))]
    assert LedgerEntry.objects.get().kind == "validation"
    assert progress_of(Participation.objects.get()).validations == 1
    LedgerEntry.objects.all().delete()
    call_command("recount_ledger")
    assert _rows() == [(f"gold:{answer.pk}", Decimal("0.1000"))]
