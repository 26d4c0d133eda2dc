"""Concurrent votes on PostgreSQL: twelve validators work through the queue of the same ten examples at
once, each voting on what the queue serves them (a verdict counts only on an example served to its
validator, so the queue's claims decide who votes on what, and when).

Each example must be settled exactly once, get exactly ``quorum`` matching verdicts, and every round and
per-person count must equal the hand-computed figures.
"""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest
from django.db import connection

from tasks.round_stats import round_counts
from tests.factories.annotation import make_example
from validation import selectors
from validation.models import Validation, ValidationClaim
from validation.services import VerdictError, next_example, submit_validation

N_VOTERS = 12
N_EXAMPLES = 10


def _verdict(example_index: int, voter_index: int) -> str:
    """The vote table. Examples 0-4: all 'correct'. 5-7: all 'incorrect'. 8: voters 0-1 'incorrect',
    the rest 'correct'. 9: voters 0-10 'flagged', voter 11 'correct'."""
    if example_index <= 4:
        return "correct"
    if example_index <= 7:
        return "incorrect"
    if example_index == 8:
        return "incorrect" if voter_index < 2 else "correct"
    return "correct" if voter_index == 11 else "flagged"


def _run_threads(target, n):
    """Start ``n`` threads on ``target(i)`` together; each closes its own connection at the end."""
    barrier = threading.Barrier(n)
    errors = []

    def run(i):
        try:
            barrier.wait(timeout=30)
            target(i)
        except Exception as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(repr(exc))
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert errors == []


@pytest.mark.django_db(transaction=True)
def test_concurrent_votes_settle_each_example_exactly_once(hate_task, hate_round, annotator, make_user):
    assert connection.vendor == "postgresql"
    examples = [make_example(hate_round, annotator) for _ in range(N_EXAMPLES)]
    index = {e.pk: i for i, e in enumerate(examples)}
    voters = [make_user(f"voter{i}") for i in range(N_VOTERS)]
    settled_by = Counter()
    refused = Counter()
    accepted = Counter()
    lock = threading.Lock()

    def vote_all(v):
        # Ask, vote on what was served, ask again, until nothing is left for this voter; an empty answer
        # while others hold claims on what is left means: ask again once they have voted.
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            example = next_example(round_=hate_round, validator=voters[v])
            if example is None:
                if not selectors.validatable_by(hate_round, voters[v]).exists():
                    return
                time.sleep(0.005)
                continue
            i = index[example.pk]
            try:
                outcome = submit_validation(example=example, validator=voters[v], verdict=_verdict(i, v))
            except VerdictError as exc:
                with lock:
                    refused[exc.code] += 1
            else:
                with lock:
                    accepted[i] += 1
                    settled_by[i] += outcome.settled
        raise AssertionError(f"voter {v} still had examples to validate after 90 s")

    _run_threads(vote_all, N_VOTERS)

    # Every example settled by exactly one vote, to the hand-computed status.
    assert settled_by == Counter(dict.fromkeys(range(N_EXAMPLES), 1))
    status = {e.pk: s for e, s in ((e, e.__class__.objects.get(pk=e.pk).status) for e in examples)}
    expected = ["validated_correct"] * 5 + ["validated_incorrect"] * 3 + ["validated_correct", "flagged"]
    assert [status[e.pk] for e in examples] == expected

    # Exactly `quorum` (3) votes of the winning verdict per example; others only as far as order allowed.
    for i, e in enumerate(examples):
        by_verdict = Counter(Validation.objects.filter(example=e).values_list("verdict", flat=True))
        winning = {"validated_correct": "correct", "validated_incorrect": "incorrect", "flagged": "flagged"}
        assert by_verdict[winning[expected[i]]] == 3
        assert sum(by_verdict.values()) == accepted[i]
    assert (
        Counter(Validation.objects.filter(example=examples[8]).values_list("verdict", flat=True))["incorrect"]
        <= 2
    )
    # Every vote was stored, never lost or doubled; none was refused: each was on what its voter was
    # served, and nobody else could vote on an example while its claim was theirs.
    total = sum(accepted.values())
    assert Validation.objects.count() == total
    assert dict(refused) == {}
    assert not ValidationClaim.objects.exists()  # every claim went with its vote

    # Round counts: 10 collected and model-fooling; verified = examples 0-4 and 8 = 6; flagged = 1.
    counts = round_counts(hate_round)
    assert (counts.collected, counts.fooling, counts.verified, counts.flagged) == (10, 10, 6, 1)
    assert counts.vmer == pytest.approx(0.6)

    # Per-person counts: the author's row, and the voters' validations adding up to the stored rows.
    stats = {s.user_id: s for s in selectors.annotator_round_stats(hate_task)}
    author = stats[annotator.pk]
    assert (author.submitted, author.fooling, author.verified_fooling, author.validations) == (10, 10, 6, 0)
    assert sum(stats[v.pk].validations for v in voters if v.pk in stats) == total
    assert sum(stats[v.pk].judged_settled for v in voters if v.pk in stats) == total


@pytest.mark.django_db(transaction=True)
def test_concurrent_queue_requests_get_different_examples(hate_round, annotator, make_user):
    assert connection.vendor == "postgresql"
    for _ in range(N_VOTERS):
        make_example(hate_round, annotator)
    voters = [make_user(f"asker{i}") for i in range(N_VOTERS)]
    served = {}

    def ask(v):
        served[v] = next_example(round_=hate_round, validator=voters[v])

    _run_threads(ask, N_VOTERS)
    assert None not in served.values()
    assert len({e.pk for e in served.values()}) == N_VOTERS
    assert ValidationClaim.objects.count() == N_VOTERS


@pytest.mark.django_db(transaction=True)
def test_a_double_submit_at_once_is_recorded_once(hate_round, annotator, validator):
    # Two tabs (or a double click) send one served example's verdict together: the row lock counts them
    # one after the other, and the second hears that the first was recorded.
    assert connection.vendor == "postgresql"
    example = make_example(hate_round, annotator)
    assert next_example(round_=hate_round, validator=validator) == example
    codes = Counter()

    def send(_):
        try:
            submit_validation(example=example, validator=validator, verdict="correct")
        except VerdictError as exc:
            codes[exc.code] += 1
        else:
            codes["recorded"] += 1

    _run_threads(send, 2)
    assert dict(codes) == {"recorded": 1, "already_validated": 1}
    assert Validation.objects.filter(example=example).count() == 1


@pytest.mark.django_db(transaction=True)
def test_two_tabs_of_one_validator_asking_at_once_hold_one_claim(hate_round, annotator, validator):
    # Both tabs are served the same example: the second ask waits for the first's claim and finds it.
    assert connection.vendor == "postgresql"
    for _ in range(6):
        make_example(hate_round, annotator)
    served = {}

    def ask(tab):
        served[tab] = next_example(round_=hate_round, validator=validator)

    for _ in range(5):
        ValidationClaim.objects.all().delete()
        served.clear()
        _run_threads(ask, 2)
        assert served[0] == served[1] is not None
        assert ValidationClaim.objects.filter(validator=validator).count() == 1
