"""Undo a verdict: the validator takes back their last vote on an example within a short window.

A mistyped key on the validate page (1, 2 or 3 record at once) must not cost the validator their
record or the example a wrong vote. Within ``undo_seconds()`` of recording it, the validator's own
ordinary vote (or gold answer) is deleted, the example is reserved for them again, and
``signals.verdict_undone`` lets the apps above reverse what they did for it (the crowd ledger writes a
reversal of the verdict's pay). A vote on an example that has settled since cannot be undone: the
settlement, its bonus and its place in a release stand. Gold answers are undone alike (they never
settle anything), so that the undo button does not tell gold items apart.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from annotation.models import Example

from . import services, signals
from .models import GoldAnswer, GoldClaim, Validation, ValidationClaim


def undo_seconds() -> int:
    """The undo window in seconds (``DYNABENCH_VALIDATION_UNDO_SECONDS``, default 30)."""
    return int(settings.DYNABENCH_VALIDATION_UNDO_SECONDS)


@transaction.atomic
def undo_verdict(*, example: Example, validator, now=None) -> Validation | GoldAnswer:
    """Delete ``validator``'s ordinary vote (or gold answer) on ``example`` and reserve the example for
    them again, so the validate page serves it next.

    Returns:
        The deleted row (its ``pk`` and ``verdict`` as they were).

    Raises:
        services.VerdictError: no vote of theirs on it (``nothing_to_undo``); recorded more than
            ``undo_seconds()`` before ``now`` (``undo_expired``); the example settled since
            (``settled``).
    """
    now = now or timezone.now()
    locked = Example.objects.select_for_update(of=("self",)).get(pk=example.pk)
    row = Validation.objects.filter(example=locked, validator=validator, is_owner_verdict=False).first()
    is_gold = row is None
    if is_gold:
        row = (
            GoldAnswer.objects.filter(gold__example=locked, validator=validator)
            .select_related("gold")
            .first()
        )
    if row is None:
        raise services.VerdictError(
            f"You have no verdict on example {locked.pk} to undo.", code="nothing_to_undo"
        )
    if row.created_at < now - timedelta(seconds=undo_seconds()):
        raise services.VerdictError(
            f"Too late to undo: a verdict can be undone for {undo_seconds()} seconds after it is recorded.",
            code="undo_expired",
        )
    if not is_gold and locked.status != Example.Status.PENDING:
        raise services.VerdictError(
            f"Example {locked.pk} is settled ({locked.get_status_display().lower()}); "
            "your verdict can no longer be undone.",
            code="settled",
        )
    round_id = row.round_id if is_gold else locked.round_id
    signals.verdict_undone.send(sender=type(row), instance=row)
    row.delete()
    # The page served the next example after the vote; that reservation goes, so this one comes back.
    ValidationClaim.objects.filter(validator=validator, example__round_id=round_id).delete()
    GoldClaim.objects.filter(validator=validator, round_id=round_id).delete()
    expires_at = now + timedelta(seconds=services.claim_seconds())
    if is_gold:
        GoldClaim.objects.create(
            gold=row.gold, validator=validator, round_id=round_id, expires_at=expires_at, created_at=now
        )
    else:
        # Someone else may have claimed it since; then it reaches this validator again later.
        services._take_claim(locked.pk, validator, now, expires_at)
    return row
