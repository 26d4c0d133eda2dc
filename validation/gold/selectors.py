"""Reads for gold items (docs/crowd.md, "Gold items"): the mixing schedule, the gold queue of a
validator, the gold claims that make a verdict a gold answer, and gold accuracy per validator.

Gold accuracy of a validator on a task = correct gold answers / gold answers there (a fraction in
[0, 1]; None with no answer). The schedule and the hold rule are stated on ``gold_due`` and
``validation.gold.services.check_gold_accuracy``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db.models import Case, Count, Exists, OuterRef, Q, QuerySet, Value, When
from django.utils import timezone

from annotation.models import Example
from tasks.models import Round, Task, TaskWorker

from ..models import GoldAnswer, GoldClaim, GoldItem, Validation

# floor(share * n) with share a float: 0.29 * 100 is 28.999999999999996, which must count as 29.
_EPSILON = 1e-9


def gold_items_of(task: Task) -> QuerySet[GoldItem]:
    """Every gold item of ``task`` (retired ones too), newest first, annotated with ``n_answers`` and
    ``n_correct``, their example and round joined."""
    return (
        GoldItem.objects.filter(task=task)
        .select_related("example__round", "created_by")
        .annotate(
            n_answers=Count("answers"),
            n_correct=Count("answers", filter=Q(answers__is_correct=True)),
        )
        .order_by("-created_at", "-id")
    )


def active_gold_example_ids(task: Task) -> QuerySet:
    """Ids of the examples of ``task`` that are gold items now (not retired), as a subquery."""
    return GoldItem.objects.filter(task=task, retired_at__isnull=True).values("example_id")


@dataclass(frozen=True)
class ServedCounts:
    """What a validator has been served on a task: ``votes`` (their ordinary verdicts, owner verdicts
    out) and ``gold_answered`` (their gold answers); ``served = votes + gold_answered``."""

    votes: int
    gold_answered: int

    @property
    def served(self) -> int:
        return self.votes + self.gold_answered


def served_counts(task: Task, validator) -> ServedCounts:
    """``ServedCounts`` of ``validator`` on ``task`` (two counts)."""
    votes = Validation.objects.filter(
        example__round__task=task, validator=validator, is_owner_verdict=False
    ).count()
    gold_answered = GoldAnswer.objects.filter(gold__task=task, validator=validator).count()
    return ServedCounts(votes=votes, gold_answered=gold_answered)


def gold_due_after(share: float, counts: ServedCounts) -> bool:
    """The mixing rule: the next example served is gold when
    ``gold_answered < floor(share * (served + 1))``.

    With ``share`` 0.25 the 4th, 8th, 12th... example served is gold (1 in 4), as long as each gold
    item served is answered; a gold item served and not answered (the claim expired) is not counted, so
    gold stays due until one is answered. A share of 0 serves no gold.
    """
    if share <= 0:
        return False
    return counts.gold_answered < math.floor(share * (counts.served + 1) + _EPSILON)


def gold_due(task: Task, validator) -> bool:
    """Whether the next example served to ``validator`` on ``task`` should be gold (``gold_due_after``
    with ``task.gold_share``)."""
    if task.gold_share <= 0:
        return False
    return gold_due_after(task.gold_share, served_counts(task, validator))


def gold_queue_for(round_: Round, validator) -> QuerySet[GoldItem]:
    """The gold items ``validator`` may be served while validating ``round_``, in serving order.

    Active gold items of the round's task (any round) whose example is not retracted, not written by
    the validator, not already voted on by them (any verdict, owner verdicts too) and not already
    answered by them as gold (through any gold item of that example). Ordered: gold of ``round_``
    first (it looks most like the round's examples: the same target models answered it), then fewest
    answers, random among equals.
    """
    task = round_.task
    voted = Validation.objects.filter(example=OuterRef("example_id"), validator=validator)
    answered = GoldAnswer.objects.filter(gold__example=OuterRef("example_id"), validator=validator)
    return (
        GoldItem.objects.filter(task=task, retired_at__isnull=True, example__is_retracted=False)
        .exclude(example__annotator=validator)
        .exclude(Exists(voted))
        .exclude(Exists(answered))
        .annotate(
            other_round=Case(When(example__round=round_, then=Value(0)), default=Value(1)),
            n_answers=Count("answers"),
        )
        .order_by("other_round", "n_answers", "?")
    )


def live_gold_claim_of(round_: Round, validator, *, now=None) -> GoldClaim | None:
    """``validator``'s unexpired gold claim in ``round_`` whose gold item is still active and not yet
    answered by them, if any (with the gold item's example)."""
    now = now or timezone.now()
    answered = GoldAnswer.objects.filter(gold=OuterRef("gold"), validator=validator)
    return (
        GoldClaim.objects.filter(
            validator=validator, round=round_, expires_at__gt=now, gold__retired_at__isnull=True
        )
        .exclude(Exists(answered))
        .select_related("gold__example")
        .first()
    )


def gold_claim_on(example: Example, validator, *, expires_after=None) -> GoldClaim | None:
    """The gold claim ``validator`` holds on ``example`` (live or expired: a verdict sent late on gold
    is still gold), if any, with its gold item; with ``expires_after`` (an aware datetime) only one that
    runs out after it (``validation.services.served_since``: a verdict counts only on what was served)."""
    claims = GoldClaim.objects.filter(gold__example=example, validator=validator)
    if expires_after is not None:
        claims = claims.filter(expires_at__gt=expires_after)
    return claims.select_related("gold").order_by("-created_at").first()


def gold_claim_expiry(round_: Round, example: Example, validator):
    """When ``validator``'s gold claim on ``example`` in ``round_`` expires, or None without one."""
    return (
        GoldClaim.objects.filter(round=round_, gold__example=example, validator=validator)
        .values_list("expires_at", flat=True)
        .first()
    )


def has_gold_answer(example: Example, validator) -> bool:
    """Whether ``validator`` answered ``example`` as gold (through any gold item of it)."""
    return GoldAnswer.objects.filter(gold__example=example, validator=validator).exists()


def gold_examples_of(validator) -> tuple[QuerySet, QuerySet]:
    """Subqueries of example ids: those ``validator`` holds a gold claim on, and those they answered
    as gold (``validation.selectors.verdict_examples`` lets them send verdicts on both)."""
    claimed = GoldClaim.objects.filter(validator=validator).values("gold__example_id")
    answered = GoldAnswer.objects.filter(validator=validator).values("gold__example_id")
    return claimed, answered


@dataclass(frozen=True)
class GoldAccuracy:
    """One validator's gold record on a task: ``answered`` gold answers, ``correct`` of them right."""

    user_id: int
    answered: int
    correct: int

    @property
    def accuracy(self) -> float | None:
        """``correct / answered`` in [0, 1]; None when nothing was answered."""
        return self.correct / self.answered if self.answered else None


def gold_accuracy(task: Task, *, user=None) -> list[GoldAccuracy]:
    """Gold accuracy of every validator who answered gold on ``task`` (or of ``user`` only), by user id
    (one query)."""
    answers = GoldAnswer.objects.filter(gold__task=task)
    if user is not None:
        answers = answers.filter(validator=user)
    rows = (
        answers.values("validator_id")
        .order_by("validator_id")
        .annotate(answered=Count("pk"), correct=Count("pk", filter=Q(is_correct=True)))
    )
    return [
        GoldAccuracy(user_id=r["validator_id"], answered=r["answered"], correct=r["correct"]) for r in rows
    ]


def gold_accuracy_of(task: Task, user) -> GoldAccuracy:
    """``user``'s ``GoldAccuracy`` on ``task`` (zero answers when none)."""
    rows = gold_accuracy(task, user=user)
    return rows[0] if rows else GoldAccuracy(user_id=user.pk, answered=0, correct=0)


def gold_accuracy_table(task: Task) -> list[dict]:
    """Gold accuracy of ``task``'s validators for its owners, as ``{validator (username), user_id,
    answered, correct, accuracy, held}`` (``held``: on hold for review there), lowest accuracy first
    (the ones to look at), then by username (three queries)."""
    records = gold_accuracy(task)
    users = dict(
        get_user_model().objects.filter(pk__in=[r.user_id for r in records]).values_list("pk", "username")
    )
    held = set(
        TaskWorker.objects.filter(task=task, held_at__isnull=False, user_id__in=users).values_list(
            "user_id", flat=True
        )
    )
    rows = [
        {
            "validator": users[r.user_id],
            "user_id": r.user_id,
            "answered": r.answered,
            "correct": r.correct,
            "accuracy": r.accuracy,
            "held": r.user_id in held,
        }
        for r in records
    ]
    return sorted(rows, key=lambda row: (row["accuracy"], row["validator"]))
