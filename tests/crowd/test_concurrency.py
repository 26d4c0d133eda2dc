"""Two at once, on PostgreSQL: two exports never include a row twice; two newcomers never both take the
last place. Each thread runs the real service in its own connection; a barrier starts them together.
The outcome is checked, whichever thread wins."""

from __future__ import annotations

import threading
from decimal import Decimal

import pytest
from django.db import connection

from crowd.models import LedgerEntry, Participation
from crowd.payments import export_payments
from crowd.services import StudyRefused
from tests.factories.crowd import enter_as, make_study
from tests.factories.tasks import builtin_task, open_round

pytestmark = pytest.mark.django_db(transaction=True)


def _together(*targets) -> tuple[list, list[str]]:
    barrier = threading.Barrier(len(targets))
    results, refusals, errors = [], [], []

    def run(target):
        try:
            barrier.wait(timeout=30)
            results.append(target())
        except StudyRefused as exc:
            refusals.append(exc.code)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(repr(exc))
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(t,)) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    return results, refusals


def _study(**fields):
    return make_study(open_round(builtin_task("hate-speech")), **fields)


def test_two_exports_at_once_pay_each_row_once():
    study = _study()
    for n in range(3):
        p = enter_as(study, f"PID-{n}").participation
        LedgerEntry.objects.create(
            study=study, round=study.round, participation=p, worker=p.user, kind="example",
            event_key=f"example:{n}", amount=Decimal("0.50"), currency="GBP",
        )  # fmt: skip
    exports, _ = _together(lambda: export_payments(study=study), lambda: export_payments(study=study))
    lines = [line for e in exports for line in e.content.splitlines()]
    assert sorted(lines) == ["PID-0,0.50", "PID-1,0.50", "PID-2,0.50"]
    assert sorted(e.n_entries for e in exports) == [0, 3]
    assert LedgerEntry.objects.filter(paid_at__isnull=True).count() == 0


def test_two_newcomers_for_the_last_place():
    study = _study(max_participants=1)
    entries, refusals = _together(lambda: enter_as(study, "first"), lambda: enter_as(study, "second"))
    assert (len(entries), refusals) == (1, ["full"])
    assert Participation.objects.count() == 1


def _invariant_every_stored_work_is_paid(user, round_1):
    """Nothing the participant stored goes unpaid, and nothing went to another round."""
    from annotation.models import Example
    from validation.models import Validation

    examples = set(Example.objects.filter(annotator=user).values_list("pk", flat=True))
    assert set(Example.objects.filter(annotator=user, round=round_1).values_list("pk", flat=True)) == examples
    votes = set(Validation.objects.filter(validator=user).values_list("pk", flat=True))
    keys = set(LedgerEntry.objects.filter(worker=user).values_list("event_key", flat=True))
    assert {f"example:{pk}" for pk in examples} <= keys
    assert {f"validation:{pk}" for pk in votes} <= keys
    participation = Participation.objects.get(user=user)
    assert participation.status == "completed"
    assert LedgerEntry.objects.filter(worker=user, kind="reward").count() == 1
    for example in Example.objects.filter(pk__in=examples):
        assert example.created_at <= participation.ended_at


@pytest.mark.parametrize("attempt", range(3))
def test_an_example_and_the_round_change_at_once(rule_model, hate_task, hate_round, attempt):
    from annotation.services import ExampleError, create_example
    from models_registry.round_targets import start_next_round

    study = make_study(hate_round, examples_required=3)
    user = enter_as(study, "PID-W").user
    create_example(task=hate_task, annotator=user, inputs={"statement": "they are vermin"}, target="hateful")

    def write():
        try:
            return create_example(
                task=hate_task, annotator=user, inputs={"statement": "they are a disease"}, target="hateful"
            )
        except ExampleError as exc:  # refused: the round closed, or the study ended
            return exc

    _together(write, lambda: start_next_round(task=hate_task, description="", models=[rule_model]))
    _invariant_every_stored_work_is_paid(user, hate_round)


@pytest.mark.parametrize("attempt", range(3))
def test_a_verdict_and_the_round_change_at_once(rule_model, hate_task, hate_round, annotator, attempt):
    from models_registry.round_targets import start_next_round
    from tests.factories.annotation import make_example
    from tests.factories.validation import serve
    from validation.services import VerdictError, submit_validation

    study = make_study(hate_round, examples_required=0, validations_required=2)
    user = enter_as(study, "PID-V").user
    example = make_example(hate_round, annotator)
    serve(example, user)

    def vote():
        try:
            return submit_validation(example=example, validator=user, verdict="correct")
        except VerdictError as exc:  # refused: the study ended
            return exc

    _together(vote, lambda: start_next_round(task=hate_task, description="", models=[rule_model]))
    _invariant_every_stored_work_is_paid(user, hate_round)
