"""The ``study`` rule: a crowd account works only inside a running study (docs/crowd.md, "Work outside a
running study").

A crowd account (``CrowdIdentity``: made by an entry link, no password) exists to do a study's paid work.
Its examples and verdicts are paid only under a running participation (``crowd.ledger``), so the rest
would be work nobody pays for: after the time limit abandoned the participation, after the study ended
with its round, after the participant finished or returned it, or on a task with none of their studies.
``tasks.qualification.check_can_contribute`` asks the apps above through
``tasks.signals.contribution_checked`` before the task's own rules; this module answers for crowd
accounts, so the create page, the validate page and the API refuse alike, with a message that says why
and, for a finished participation, the completion page as the way on. Accounts of people who signed up
are not crowd accounts, and this rule leaves them alone.

The time limit: new work is refused from ``SUBMIT_MARGIN`` before the deadline. The check runs in the
storing transaction just before the row is written, and the row's time must fall within the limit for
the ledger to pay it; the margin covers the moments in between, so accepted work is always paid.
"""

from __future__ import annotations

import re
from datetime import UTC, timedelta

from django.urls import reverse
from django.utils import timezone

from tasks.qualification import WRITE, NotQualified

from .models import CrowdIdentity, Participation, Platform
from .services import PLATFORM_NAMES, round_end_phrase

#: The code of the refusal (``NotQualified.code``, the API's ``code``).
CODE = "study"
#: How long before its deadline a participation stops taking new work (module docstring).
SUBMIT_MARGIN = timedelta(seconds=5)
#: Crowd accounts' usernames (``services.username_for``): a cheap first test, so that the accounts of
#: people who signed up cost no query; a name of this shape is then looked up.
_CROWD_USERNAME = re.compile(rf"(?:{'|'.join(Platform.values)})-[0-9a-f]{{20}}")


def is_crowd_account(user) -> bool:
    """Whether ``user`` is a crowd account (bound to a ``CrowdIdentity``): one query for a username of the
    crowd accounts' shape, none for any other."""
    username = getattr(user, "username", "") or ""
    if not _CROWD_USERNAME.fullmatch(username):
        return False
    return CrowdIdentity.objects.filter(user_id=user.pk).exists()


def running(participation: Participation, now) -> bool:
    """Whether ``participation`` takes new work at ``now``: active, and ``SUBMIT_MARGIN`` or more before
    its deadline."""
    return (
        participation.status == Participation.Status.ACTIVE and now <= participation.deadline - SUBMIT_MARGIN
    )


def _utc(moment) -> str:
    return moment.astimezone(UTC).strftime("%H:%M")


def refusal(participation: Participation | None, task, action: str, now) -> NotQualified:
    """The ``study`` refusal for a crowd account whose newest participation on ``task`` is
    ``participation`` (None: none on this task) and takes no new work: the message says why, and
    ``url`` is the completion page for a completed participation (None otherwise)."""
    if participation is None:
        return NotQualified(
            CODE,
            f"This account takes part in crowd studies only, and none of yours runs on {task.name}: examples "
            "and validations here are not recorded or paid.",
        )
    study = participation.study
    complete = reverse("crowd:complete", args=[study.public_id])
    status = participation.status
    if status == Participation.Status.COMPLETED and participation.ended_early:
        return NotQualified(
            CODE,
            f"Your study {study.name} ended early: {round_end_phrase(study)}. New examples and validations "
            "are not recorded; you are paid for what you did and for the submission. Get your completion "
            "code on the study's completion page.",
            complete,
        )
    if status == Participation.Status.COMPLETED:
        return NotQualified(
            CODE,
            f"You have finished {study.name}: new examples and validations are not recorded or paid. Your "
            "completion code is on the study's completion page.",
            complete,
        )
    if status == Participation.Status.RETURNED:
        return NotQualified(
            CODE, f"You returned {study.name}: new examples and validations are not recorded or paid."
        )
    if status == Participation.Status.ABANDONED or now > participation.deadline - SUBMIT_MARGIN:
        platform = PLATFORM_NAMES.get(study.platform, "the platform")
        return NotQualified(
            CODE,
            f"Your time for {study.name} ran out at {_utc(participation.deadline)} UTC (its limit is "
            f"{study.time_limit_minutes} minutes), so your place went to someone else: new examples and "
            "validations are not recorded or paid. What you did before is kept and paid. Please return the "
            f"study on {platform}.",
        )
    # Active, in time, but its round is not the one collecting (ended without ``end_study``, say).
    return NotQualified(
        CODE,
        f"Your study {study.name} collects in round {study.round.number}, which no longer takes examples: "
        "new examples are not recorded or paid.",
    )


def check_study_running(*, task, user, action: str, lock: bool = False, now=None) -> Participation | None:
    """Refuse a crowd account that has no running participation on ``task`` (``NotQualified``, code
    ``study``; ``refusal`` says why). To write, the participation's round must be the task's current round
    (where the example would go); to validate, any round of the task. Returns that participation (None
    for an account that is not a crowd account). ``lock``: take the row locks of the user's participations
    on the task (inside the storing transaction), so ending the study (``services.end_study``) waits for
    this write, or this write sees the end.

    Raises:
        NotQualified: ``study``.
    """
    if not is_crowd_account(user):
        return None
    now = now or timezone.now()
    mine = Participation.objects.filter(user=user, study__round__task=task).select_related(
        "study__round__task"
    )
    if lock:
        mine = mine.select_for_update(of=("self",))
    participations = list(mine.order_by("-started_at", "-pk"))
    for participation in participations:
        if running(participation, now) and (
            action != WRITE or participation.round_id == task.current_round_id
        ):
            return participation
    raise refusal(participations[0] if participations else None, task, action, now)
