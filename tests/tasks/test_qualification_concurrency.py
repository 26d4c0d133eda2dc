"""Two requests at once at the daily cap, on PostgreSQL: exactly one is stored.

Each thread runs the real service in its own connection; a barrier starts them together. The writer's
``TaskWorker`` row lock (``check_can_contribute``) makes the second count the first's row.
"""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from annotation.models import Example
from annotation.services import NotQualifiedToWrite, create_example
from tests.factories.annotation import make_example
from tests.factories.validation import serve
from validation.models import Validation
from validation.services import VerdictError, submit_validation


def _together(targets) -> tuple[list, list[str]]:
    """Run the callables at once; returns (results, refusal codes)."""
    barrier = threading.Barrier(len(targets))
    results, codes, errors = [], [], []
    lock = threading.Lock()

    def run(target):
        try:
            barrier.wait(timeout=30)
            value = target()
        except (NotQualifiedToWrite, VerdictError) as exc:
            with lock:
                codes.append(exc.code)
        except Exception as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(repr(exc))
        else:
            with lock:
                results.append(value)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(t,)) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
    return results, codes


@pytest.mark.django_db(transaction=True)
def test_two_writes_at_the_cap_store_exactly_one(hate_task, hate_round, annotator):
    assert connection.vendor == "postgresql"
    hate_task.daily_example_cap = 2
    hate_task.save(update_fields=["daily_example_cap"])
    make_example(hate_round, annotator)  # one of two written: room for exactly one more

    def write(text):
        return lambda: create_example(
            task=hate_task, annotator=annotator, inputs={"statement": text}, target="hateful"
        )

    results, codes = _together([write("left"), write("right")])
    assert len(results) == 1 and codes == ["daily_cap"]
    assert Example.objects.filter(annotator=annotator).count() == 2


@pytest.mark.django_db(transaction=True)
def test_two_verdicts_at_the_cap_on_different_examples_store_exactly_one(
    hate_task, hate_round, annotator, validator
):
    # Different examples take different example row locks: only the validator's row lock orders them.
    hate_task.daily_validation_cap = 1
    hate_task.save(update_fields=["daily_validation_cap"])
    first, second = make_example(hate_round, annotator), make_example(hate_round, annotator)
    serve(first, validator)  # a verdict counts only on an example served to its validator
    serve(second, validator)

    def vote(example):
        return lambda: submit_validation(example=example, validator=validator, verdict="correct")

    results, codes = _together([vote(first), vote(second)])
    assert len(results) == 1 and codes == ["daily_cap"]
    assert Validation.objects.filter(validator=validator).count() == 1
