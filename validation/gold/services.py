"""Writes for gold items (docs/crowd.md, "Gold items"): owners mark and retire gold items; the queue
serves them (``serve_gold``, called by ``services.next_example``) and a verdict on one served as gold
becomes a ``GoldAnswer`` (``record_gold_answer``, called by ``services.submit_validation``), which may
put the validator on hold for review (``check_gold_accuracy``).

A gold item is served and answered exactly like any other example: same page, same API bodies, same
response to the verdict. Only ``GoldClaim`` records that it was served as gold.
"""

from __future__ import annotations

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from annotation.models import Example
from core.text_rules import check_free_text, normalise_newlines
from tasks.models import Round, Task
from tasks.qualification import hold_for_review

from ..models import GoldAnswer, GoldClaim, GoldItem, Validation
from . import selectors as gold_selectors

MAX_NOTE_LENGTH = 2000


class GoldError(Exception):
    """A gold item that cannot be marked or retired.

    ``errors`` maps field names (``example``, ``verdict``, ``note`` or ``__all__``) to messages;
    ``code`` is ``invalid``, ``not_owner`` or ``exists`` (the example is already an active gold item).
    """

    def __init__(self, errors: dict[str, list[str]] | str, *, code: str = "invalid"):
        if isinstance(errors, str):
            errors = {"__all__": [errors]}
        self.errors = errors
        self.code = code
        super().__init__("; ".join(f"{k}: {' '.join(v)}" for k, v in errors.items()))


@transaction.atomic
def mark_gold(*, task: Task, example: Example, verdict: str, by, note: str = "", now=None) -> GoldItem:
    """Make ``example`` (any round of ``task``, not retracted) a gold item with the known ``verdict``
    (``correct``, ``incorrect`` or ``flagged``), by the task owner ``by``.

    Raises:
        GoldError: ``by`` does not own the task (``not_owner``); unknown verdict, an example of another
            task or retracted, a note too long or with control characters (``invalid``); the example is
            already an active gold item (``exists``).
    """
    if not task.is_owner(by):
        raise GoldError("Only the task's owners can mark gold items.", code="not_owner")
    errors: dict[str, list[str]] = {}
    if verdict not in Validation.Verdict.values:
        errors["verdict"] = [f"Choose one of: {', '.join(Validation.Verdict.values)}."]
    if example.round.task_id != task.pk:
        errors["example"] = ["Not an example of this task."]
    elif example.is_retracted:
        errors["example"] = ["This example was retracted by its author."]
    note = normalise_newlines(note or "")
    problem = check_free_text(note, "The note", MAX_NOTE_LENGTH)
    if problem:
        errors["note"] = [problem]
    if errors:
        raise GoldError(errors)
    try:
        with transaction.atomic():  # a savepoint: the one-active-gold-per-example constraint decides a race
            return GoldItem.objects.create(
                task=task,
                example=example,
                verdict=verdict,
                note=note,
                created_by=by,
                created_at=now or timezone.now(),
            )
    except IntegrityError:
        raise GoldError({"example": ["This example is already a gold item."]}, code="exists") from None


@transaction.atomic
def retire_gold(*, gold: GoldItem, by, now=None) -> str:
    """Stop serving ``gold``: deleted when nobody answered it yet (``"deleted"``), else kept with
    ``retired_at`` set, so its answers still count in gold accuracy (``"retired"``).

    Raises:
        GoldError: ``by`` does not own the task (``not_owner``).
    """
    if not gold.task.is_owner(by):
        raise GoldError("Only the task's owners can remove gold items.", code="not_owner")
    if not GoldAnswer.objects.filter(gold=gold).exists():
        GoldClaim.objects.filter(gold=gold).delete()
        gold.delete()
        return "deleted"
    GoldItem.objects.filter(pk=gold.pk, retired_at__isnull=True).update(retired_at=now or timezone.now())
    return "retired"


def held_gold(*, round_: Round, validator, now, expires_at) -> Example | None:
    """The gold example ``validator`` holds a live claim on in ``round_`` (its claim extended to
    ``expires_at``), or None. Called by ``services.next_example`` inside its transaction."""
    claim = gold_selectors.live_gold_claim_of(round_, validator, now=now)
    if claim is None:
        return None
    GoldClaim.objects.filter(pk=claim.pk).update(expires_at=expires_at)
    return claim.gold.example


def serve_gold(*, round_: Round, validator, now, expires_at) -> Example | None:
    """If gold is due for ``validator`` (``gold_selectors.gold_due``), claim the first item of their
    gold queue until ``expires_at`` and return its example; else, or with no gold left for them, None
    (the ordinary queue serves). Their earlier gold claims in ``round_`` go. Called by
    ``services.next_example`` inside its transaction."""
    GoldClaim.objects.filter(validator=validator, round=round_).delete()
    if not gold_selectors.gold_due(round_.task, validator):
        return None
    gold = gold_selectors.gold_queue_for(round_, validator).select_related("example").first()
    if gold is None:
        return None
    try:
        with transaction.atomic():  # a savepoint: the same validator asking twice at once gets one claim
            GoldClaim.objects.create(
                gold=gold, validator=validator, round=round_, expires_at=expires_at, created_at=now
            )
    except IntegrityError:
        return None
    return gold.example


def _shared_id() -> int | None:
    """A fresh id from ``Validation``'s sequence on PostgreSQL, so a gold answer's id, which the verdict
    response shows as a vote's id, runs in the same series as the real votes around it (None elsewhere:
    the table's own sequence)."""
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT nextval(pg_get_serial_sequence(%s, 'id'))", [Validation._meta.db_table])
        return cursor.fetchone()[0]


def record_gold_answer(
    *, claim: GoldClaim, validator, verdict: str, corrected_label: str = "", reason: str = "", now=None
) -> GoldAnswer | None:
    """Store ``validator``'s verdict on the gold item of ``claim`` as a ``GoldAnswer`` (``is_correct``:
    the verdict equals the gold verdict), drop their gold claims on it and check their gold accuracy
    (``check_gold_accuracy``). The inputs were cleaned by the caller (``services.submit_validation``,
    under the example's row lock). Returns None, storing nothing, if they had answered it already.
    """
    now = now or timezone.now()
    gold = claim.gold
    if GoldAnswer.objects.filter(gold=gold, validator=validator).exists():
        return None
    shared_id = _shared_id()
    fields = {} if shared_id is None else {"id": shared_id}
    answer = GoldAnswer.objects.create(
        gold=gold,
        validator=validator,
        verdict=verdict,
        corrected_label=corrected_label,
        reason=reason,
        is_correct=verdict == gold.verdict,
        round_id=claim.round_id,
        created_at=now,
        **fields,
    )
    GoldClaim.objects.filter(gold__example_id=gold.example_id, validator=validator).delete()
    check_gold_accuracy(task=gold.task, user=validator, now=now)
    return answer


def check_gold_accuracy(*, task: Task, user, now=None) -> bool:
    """Hold ``user`` for review on ``task`` (``tasks.qualification.hold_for_review``) when they have at
    least ``task.gold_min_answers`` gold answers there and their gold accuracy (correct / answered) is
    below ``task.gold_accuracy_threshold``; no threshold, no hold. With threshold 0.8 and 5 answers,
    4 correct (0.8) is not held and 3 correct (0.6) is. Returns True if this call placed the hold."""
    threshold = task.gold_accuracy_threshold
    if threshold is None:
        return False
    record = gold_selectors.gold_accuracy_of(task, user)
    if record.answered < max(1, task.gold_min_answers) or record.accuracy >= threshold:
        return False
    reason = (
        f"Gold accuracy {record.correct}/{record.answered} ({record.accuracy:.0%}) is below the task's "
        f"threshold of {threshold:.0%}."
    )
    return hold_for_review(task=task, user=user, reason=reason, now=now)
