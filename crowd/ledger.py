"""The pay ledger: what each crowd worker is owed, one row per event (docs/crowd.md, "Pay ledger").

One function per object decides its rows from the stored state, whoever calls it: the signal handlers
(``crowd.apps``) when an example is written, retracted or settled and when a verdict is recorded, and
``manage.py recount_ledger``. So a recount finds nothing to add, and a retried request or a double click
adds nothing either: rows are inserted with ``get_or_create`` under the unique constraint
(event_key, worker).

Rules:

* An event (an example written, an ordinary verdict cast) is paid under the author's participation that
  was running at the event's time in that round (``selectors.participation_for_event``); work outside
  any study is not paid, nor work beyond the submission's required amounts.
* ``example:<id>`` pays ``pay_per_example``; ``validation:<id>`` pays ``pay_per_validation``, and so
  does ``gold:<gold answer id>`` (kind validation: a verdict on a gold item is work like any other, and
  pay or progress must not reveal which items were gold). Rows of amount 0 are kept: progress counts them. A retracted example's base pay is reversed once
  (``reversal:example:<id>``).
* Bonus: an example whose base pay is in the ledger, settled validated_correct with ``model_wrong`` true
  (and not retracted), is owed one ``bonus_per_verified_fooling``. When its status changes (an owner
  overturns it), the bonus count is reconciled: the desired count (1 or 0) against the current one
  (bonus rows minus bonus reversals), adding ``bonus:<id>:<n>`` or ``reversal:bonus:<id>:<n>``.
* ``reward:<participation id>`` pays ``reward`` when a participation completes.
* A verdict its validator undid (``validation.verdict_undo``) keeps its pay row and gets one reversal,
  ``reversal:validation:<id>`` or ``reversal:gold:<id>``, of the same amount (``reverse_verdict_pay``);
  progress nets it out.
"""

from __future__ import annotations

from django.db import transaction

from annotation.goal import goal_met
from annotation.models import Example
from validation.models import GoldAnswer, Validation

from . import selectors
from .models import ZERO, LedgerEntry, Participation


def _ever_took_part(user_id: int | None, round_id: int) -> bool:
    """Whether ``user_id`` has had a participation in a study of ``round_id``: every ledger row of an
    event in that round is paid under one, so without it there is nothing to reconcile (one indexed
    query, instead of the example's lock and the ledger lookups, for work done outside any study)."""
    return user_id is not None and Participation.objects.filter(user_id=user_id, round_id=round_id).exists()


def _add(participation: Participation, *, worker_id: int, kind: str, event_key: str, amount) -> bool:
    """Insert one row unless (event_key, worker) is already there; True if inserted. ``get_or_create``
    inserts in a savepoint and, when a concurrent insert won the unique constraint, returns that row."""
    study = participation.study
    _, created = LedgerEntry.objects.get_or_create(
        event_key=event_key,
        worker_id=worker_id,
        defaults={
            "study": study,
            "round_id": study.round_id,
            "participation": participation,
            "kind": kind,
            "amount": amount,
            "currency": study.currency,
        },
    )
    return created


def reconcile_example(example: Example) -> int:
    """Bring the ledger rows of ``example`` (base pay, its reversal, bonuses) in line with its state.

    Takes the example's row lock (the callers in the services already hold it), then the participation's
    when a base pay is decided. Returns how many rows were added.
    """
    if not _ever_took_part(example.annotator_id, example.round_id):
        # Most examples: written outside any study, nothing to lock or look up. Checked before the
        # transaction, so they cost one query and no savepoint inside the service's transaction.
        return 0
    return _reconcile_example_locked(example)


@transaction.atomic
def _reconcile_example_locked(example: Example) -> int:
    example = Example.objects.select_for_update(of=("self",)).get(pk=example.pk)
    author_id = example.annotator_id
    if author_id is None or example.source != Example.Source.CREATED:
        return 0
    rows = LedgerEntry.objects.filter(worker_id=author_id)
    base = rows.filter(event_key=f"example:{example.pk}").select_related("participation__study").first()
    added = 0
    if base is None:
        if example.is_retracted:
            return 0
        participation = selectors.participation_for_event(
            example.annotator, example.round_id, example.created_at, lock=True
        )
        if participation is None:
            return 0
        if selectors.progress_of(participation).examples >= participation.study.examples_required:
            return 0  # beyond the submission: not paid
        if not _add(
            participation,
            worker_id=author_id,
            kind=LedgerEntry.Kind.EXAMPLE,
            event_key=f"example:{example.pk}",
            amount=participation.study.pay_per_example,
        ):
            return 0
        added += 1
        base = rows.get(event_key=f"example:{example.pk}")
    participation = base.participation
    study = participation.study
    if example.is_retracted:
        added += _add(
            participation,
            worker_id=author_id,
            kind=LedgerEntry.Kind.REVERSAL,
            event_key=f"reversal:example:{example.pk}",
            amount=-base.amount,
        )

    bonuses = list(rows.filter(kind=LedgerEntry.Kind.BONUS, event_key__startswith=f"bonus:{example.pk}:"))
    reversals = rows.filter(
        kind=LedgerEntry.Kind.REVERSAL, event_key__startswith=f"reversal:bonus:{example.pk}:"
    )
    n_reversed = reversals.count()
    current = len(bonuses) - n_reversed
    verified = (
        not example.is_retracted
        and example.status == Example.Status.VALIDATED_CORRECT
        and goal_met(example, example.round.task.cfg)
    )
    desired = 1 if verified and study.bonus_per_verified_fooling > ZERO else 0
    if desired > current:
        added += _add(
            participation,
            worker_id=author_id,
            kind=LedgerEntry.Kind.BONUS,
            event_key=f"bonus:{example.pk}:{len(bonuses) + 1}",
            amount=study.bonus_per_verified_fooling,
        )
    elif desired < current:
        by_key = {b.event_key: b.amount for b in bonuses}
        n = n_reversed + 1
        added += _add(
            participation,
            worker_id=author_id,
            kind=LedgerEntry.Kind.REVERSAL,
            event_key=f"reversal:bonus:{example.pk}:{n}",
            amount=-by_key[f"bonus:{example.pk}:{n}"],
        )
    return added


def _pay_verdict(*, worker, round_id: int | None, at, event_key: str) -> int:
    """Pay one verdict (``event_key``) under its validator's participation running at ``at`` in
    ``round_id``, within the submission's required validations. Returns 1 when a row was added."""
    if round_id is None or LedgerEntry.objects.filter(worker=worker, event_key=event_key).exists():
        return 0
    participation = selectors.participation_for_event(worker, round_id, at, lock=True)
    if participation is None:
        return 0
    if selectors.progress_of(participation).validations >= participation.study.validations_required:
        return 0
    return int(
        _add(
            participation,
            worker_id=worker.pk,
            kind=LedgerEntry.Kind.VALIDATION,
            event_key=event_key,
            amount=participation.study.pay_per_validation,
        )
    )


@transaction.atomic
def reconcile_validation(validation: Validation) -> int:
    """Pay an ordinary verdict (``validation:<id>``) under its validator's running participation (owner
    verdicts are not crowd work). Returns 1 when a row was added, else 0."""
    if validation.is_owner_verdict:
        return 0
    if type(validation).example.is_cached(validation):  # the service's own example: not read again
        round_id = validation.example.round_id
    else:
        round_id = Example.objects.filter(pk=validation.example_id).values_list("round_id", flat=True).get()
    return _pay_verdict(
        worker=validation.validator,
        round_id=round_id,
        at=validation.created_at,
        event_key=f"validation:{validation.pk}",
    )


@transaction.atomic
def reconcile_gold_answer(answer: GoldAnswer) -> int:
    """Pay a verdict on a gold item (``gold:<answer id>``, kind validation) like any other verdict, in the
    round the validator was validating: a participant's pay and progress must not tell them which items
    were gold. Returns 1 when a row was added, else 0."""
    return _pay_verdict(
        worker=answer.validator, round_id=answer.round_id, at=answer.created_at, event_key=f"gold:{answer.pk}"
    )


@transaction.atomic
def reverse_verdict_pay(event_key: str, worker_id: int) -> int:
    """Reverse the pay row ``event_key`` (``validation:<id>`` or ``gold:<id>``) of ``worker_id``, whose
    verdict was undone: one ``reversal:<event_key>`` row of minus its amount, under the same participation.
    Returns 1 when a row was added; 0 when the verdict was not paid (outside any study, past the required
    amount) or is reversed already."""
    paid = (
        LedgerEntry.objects.filter(event_key=event_key, worker_id=worker_id)
        .select_related("participation__study")
        .first()
    )
    if paid is None:
        return 0
    return int(
        _add(
            paid.participation,
            worker_id=worker_id,
            kind=LedgerEntry.Kind.REVERSAL,
            event_key=f"reversal:{event_key}",
            amount=-paid.amount,
        )
    )


def record_reward(participation: Participation) -> int:
    """The reward row of a completed participation (none when the study's reward is 0)."""
    if participation.status != Participation.Status.COMPLETED or participation.study.reward <= ZERO:
        return 0
    return int(
        _add(
            participation,
            worker_id=participation.user_id,
            kind=LedgerEntry.Kind.REWARD,
            event_key=f"reward:{participation.pk}",
            amount=participation.study.reward,
        )
    )


def reconcile_participation(participation: Participation) -> int:
    """Recount one participation from the stored examples and verdicts: every example and ordinary
    verdict of its worker in its round from its start on (oldest first, so the required amounts are
    filled in the order the work was done), plus the examples already paid under it, and its reward.
    Idempotent; returns how many rows were added."""
    participation = Participation.objects.select_related("study").get(pk=participation.pk)
    added = 0
    examples = Example.objects.filter(
        annotator_id=participation.user_id,
        round_id=participation.round_id,
        created_at__gte=participation.started_at,
    ).order_by("created_at", "id")
    paid = set(
        participation.ledger_entries.filter(kind=LedgerEntry.Kind.EXAMPLE).values_list("event_key", flat=True)
    )
    seen = set()
    for example in examples:
        seen.add(f"example:{example.pk}")
        added += reconcile_example(example)
    for key in sorted(paid - seen):
        added += reconcile_example(Example.objects.get(pk=int(key.split(":")[1])))
    validations = Validation.objects.filter(
        validator_id=participation.user_id,
        example__round_id=participation.round_id,
        is_owner_verdict=False,
        created_at__gte=participation.started_at,
    )
    answers = GoldAnswer.objects.filter(
        validator_id=participation.user_id,
        round_id=participation.round_id,
        created_at__gte=participation.started_at,
    )
    # Votes and gold answers in the order they were cast, so the required amount fills as it did live.
    verdicts = sorted([*validations, *answers], key=lambda v: (v.created_at, v.pk))
    for verdict in verdicts:
        if isinstance(verdict, GoldAnswer):
            added += reconcile_gold_answer(verdict)
        else:
            added += reconcile_validation(verdict)
    added += record_reward(participation)
    return added
