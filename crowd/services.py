"""Writes for crowd studies: entering through the link, consent, completion, returning a study, ending a
study when its round stops collecting, and the owner's study settings (docs/crowd.md, "Crowd studies").

Slots: a study holds ``max_participants`` participations at most that are active or completed. The study
row is locked (``select_for_update``) while a newcomer is counted and admitted, so two people entering at
once cannot both take the last slot. Expired participations are abandoned first (``lifecycle``).

Sessions: every participant's link carries the study's key, so the key alone does not tell participants
apart. A participation is therefore bound to the platform session that opened it (``session_key_of``:
Prolific ``SESSION_ID``, MTurk ``assignmentId``, the generic ``session_id`` when the first entry had
one). Re-entering it with another (or no) session id is refused (``other_session``) unless the browser
is already signed in as that participant. Residual risk: a participation that does not exist yet (in
another study, or a generic study whose links carry no ``session_id``) can still be opened by anyone
who has the link and knows a participant id. Ids are never shown on this platform (usernames are hashes),
and what that participation earns is paid to the id's owner, not to whoever opened it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from tasks.models import Task
from validation import services as validation_services

from . import ledger, lifecycle, selectors
from .links import EntryIds
from .models import CrowdIdentity, Participation, Platform, Study, new_entry_key


class StudyRefused(Exception):
    """An entry, consent or completion the study refuses; ``code`` names the rule, the message is for the
    participant: ``closed``, ``full``, ``freed`` (returned or abandoned: no second entry),
    ``other_session`` (an existing participation opened with another platform session),
    ``busy`` (an active participation in another study of the same round), ``not_done`` (completing
    before the work is done), ``not_active`` (the participation ended)."""

    def __init__(self, code: str, message: str):
        self.code = code
        super().__init__(message)


@dataclass(frozen=True)
class Entry:
    """The outcome of ``enter``: the participant's account and participation; ``created`` for a newcomer."""

    user: object
    participation: Participation
    created: bool


def username_for(platform: str, participant_id: str) -> str:
    """The derived username of a crowd account: ``<platform>-<first 20 hex digits of sha256(id)>``.
    The participant id is not shown in it (it may be personal data on some platforms)."""
    digest = hashlib.sha256(f"{platform}:{participant_id}".encode()).hexdigest()[:20]
    return f"{platform}-{digest}"


def _existing_user(platform: str, participant_id: str):
    identity = (
        CrowdIdentity.objects.select_related("user")
        .filter(platform=platform, participant_id=participant_id)
        .first()
    )
    return identity.user if identity is not None else None


def _new_identity(platform: str, participant_id: str):
    """A new account bound to (platform, participant id), with an unusable password (the caller holds
    the study's row lock; the unique constraints remain the last line of defence)."""
    User = get_user_model()
    user = User(username=username_for(platform, participant_id))
    user.set_unusable_password()
    user.save()
    CrowdIdentity.objects.create(platform=platform, participant_id=participant_id, user=user)
    return user


#: How the pages name each platform to a participant.
PLATFORM_NAMES = {
    Platform.PROLIFIC: "Prolific",
    Platform.MTURK: "MTurk",
    Platform.GENERIC: "the platform you came from",
}


def session_key_of(platform: str, *, session_id: str = "", assignment_id: str = "") -> str:
    """The platform session a participation is bound to: MTurk's ``assignmentId``, else the
    ``session_id`` (Prolific ``SESSION_ID``, generic ``session_id``; "" when a generic link had none)."""
    return assignment_id if platform == Platform.MTURK else session_id


def _check_session(participation: Participation, ids: EntryIds, signed_in) -> None:
    """Refuse re-entering ``participation`` from another platform session (module docstring), unless
    ``signed_in`` (the browser's user) is its participant already."""
    platform = participation.study.platform
    bound = session_key_of(
        platform, session_id=participation.session_id, assignment_id=participation.assignment_id
    )
    given = session_key_of(platform, session_id=ids.session_id, assignment_id=ids.assignment_id)
    if not bound or given == bound:
        return
    if signed_in is not None and getattr(signed_in, "pk", None) == participation.user_id:
        return
    name = PLATFORM_NAMES.get(platform, "the platform")
    raise StudyRefused(
        "other_session",
        f"This place was opened from another session on {name}; open the study from {name} itself.",
    )


def _resume(participation: Participation, now) -> Participation:
    lifecycle.expire_if_late(participation, now=now)
    if participation.status in (Participation.Status.RETURNED, Participation.Status.ABANDONED):
        raise StudyRefused(
            "freed",
            "You have already returned this study or its time limit passed, so its place went to someone "
            "else; you cannot take part again.",
        )
    return participation


@transaction.atomic
def enter(*, study: Study, ids: EntryIds, signed_in=None, now=None) -> Entry:
    """Admit (or resume) the participant the entry link names: their account, then their participation.

    The caller has checked the key (``links.key_matches``) and read ``ids`` (``links.parse_entry``; not a
    preview). ``signed_in`` is the user the browser is signed in as (or None). An existing participation
    is resumed only from the platform session that opened it, or by its own signed-in participant
    (module docstring). A completed participation is returned as it is (the completion page shows the
    code again).
    A newcomer's account is made only once they are admitted: a refusal creates nothing. The study's row
    lock, taken first, serialises entries: two first entries of one person at once (two tabs) make one
    account and one participation, and two newcomers cannot both take the last place.

    Raises:
        StudyRefused: ``other_session``, ``freed``, ``closed``, ``full`` or ``busy``.
    """
    now = now or timezone.now()
    study = Study.objects.select_for_update().get(pk=study.pk)
    user = _existing_user(study.platform, ids.participant_id)
    if user is not None:
        existing = Participation.objects.select_related("study").filter(study=study, user=user).first()
        if existing is not None:
            _check_session(existing, ids, signed_in)
            return Entry(user, _resume(existing, now), False)
    if not study.is_open or not study.round.is_open:
        raise StudyRefused("closed", closed_message(study))
    lifecycle.abandon_expired(study=study, now=now)
    if selectors.slots_taken(study) >= study.max_participants:
        raise StudyRefused(
            "full", "This study is full: every place is taken. Please return it on the platform."
        )
    if user is None:
        user = _new_identity(study.platform, ids.participant_id)
    else:
        other = selectors.active_participations_of(user).filter(round_id=study.round_id).first()
        if other is not None and not lifecycle.expire_if_late(other, now=now):
            raise StudyRefused(
                "busy",
                f"You are taking part in another study of this round ({other.study.name}); finish it first.",
            )
    participation = Participation.objects.create(
        study=study,
        round_id=study.round_id,
        user=user,
        session_id=ids.session_id,
        platform_study_id=ids.platform_study_id,
        assignment_id=ids.assignment_id,
        hit_id=ids.hit_id,
        turk_submit_to=ids.turk_submit_to,
        started_at=now,
    )
    return Entry(user, participation, True)


def round_end_phrase(study: Study) -> str:
    """How the end of the study's round is told: ``"round 1 of Hate speech closed"``, or ``"... stopped
    collecting examples"`` when another round was made current without closing it."""
    round_ = study.round
    how = "closed" if round_.is_closed else "stopped collecting examples"
    return f"round {round_.number} of {round_.task.name} {how}"


def closed_message(study: Study) -> str:
    """Why a closed study refuses a newcomer: its round stopped collecting (``end_study``), or its owner
    closed it."""
    if study.ended_at is not None or not study.round.is_open:
        platform = PLATFORM_NAMES.get(study.platform, "the platform")
        return (
            f"This study has ended: round {study.round.number} of {study.round.task.name} stopped collecting "
            f"examples. It takes no new participants; please return it on {platform}."
        )
    return "This study is closed; it takes no new participants."


@dataclass(frozen=True)
class StudyEnded:
    """What ``end_study`` did to a study's running participations: ``completed`` (the submission's work
    was done), ``early`` (completed before it was: ``Participation.ended_early``), ``abandoned`` (past
    their time limit before the end)."""

    study: Study
    completed: int
    early: int
    abandoned: int


@transaction.atomic
def end_study(*, study: Study, now=None) -> StudyEnded:
    """End ``study`` because its round stopped collecting examples (docs/crowd.md, "When the round changes").

    In one transaction, with the study's row lock and then its running participations' (so an example or
    verdict being stored under one is paid first, and none is stored after): the study is closed to
    newcomers (``is_open`` false, ``ended_at``); a participation past its time limit is abandoned at its
    deadline, as it would have been anyway; every other active one is completed now, ``ended_early`` when
    the submission's work was not done, and its reward recorded (the platform pays a submission's reward
    whole on approval); the examples served to them for validation go back to the queue. What each did is
    paid already (``crowd.ledger``: each example and verdict up to the required amounts, and bonuses when
    their examples settle later). Idempotent: a second call finds nobody active and the study closed, and
    changes nothing. Returns what it did (``StudyEnded``).
    """
    # A no-key lock: a ledger row being inserted under this study (an event paid in a transaction that
    # holds a participation's lock, which this waits for next) is not blocked by it, so they cannot deadlock.
    study = (
        Study.objects.select_for_update(no_key=True, of=("self",))
        .select_related("round__task")
        .get(pk=study.pk)
    )
    running = list(
        Participation.objects.select_for_update(of=("self",))
        .select_related("study", "user")
        .filter(study=study, status=Participation.Status.ACTIVE)
        .order_by("pk")
    )
    ended = now or timezone.now()  # read after the locks: every event paid under them is older
    completed = early = abandoned = 0
    for participation in running:
        if ended > participation.deadline:  # its time ran out before the round ended
            abandoned += lifecycle.expire_if_late(participation, now=ended)
        else:
            cut_short = not selectors.progress_of(participation).done
            if lifecycle.mark_completed(participation, now=ended, ended_early=cut_short):
                participation.refresh_from_db()
                ledger.record_reward(participation)
                early += cut_short
                completed += not cut_short
        # The examples served to them go back to the queue now, not when their claims run out.
        validation_services.release_claims(validator=participation.user, round_=study.round)
    if study.is_open or study.ended_at is None:
        study.is_open = False
        study.ended_at = ended
        study.save(update_fields=["is_open", "ended_at"])  # through save: the audit log records it
    return StudyEnded(study, completed, early, abandoned)


@transaction.atomic
def end_stranded_studies(*, task_id: int, now=None) -> list[StudyEnded]:
    """End (``end_study``) every live study of the task whose round no longer collects examples: closed,
    or not the task's current round. Called inside the transaction that ended the round
    (``tasks.signals.round_ended``) or saved the task or round (an admin form); a round that still collects
    is left alone, so calling it again changes nothing."""
    current_id = Task.objects.filter(pk=task_id).values_list("current_round_id", flat=True).first()
    stranded = selectors.live_studies(task_id).exclude(round_id=current_id, round__is_closed=False)
    return [end_study(study=study, now=now) for study in stranded]


def record_consent(*, participation: Participation, now=None) -> bool:
    """Record the participant's consent, once (``consented_at`` keeps the first time); True if recorded now.

    Raises:
        StudyRefused: ``not_active`` when the participation has ended.
    """
    now = now or timezone.now()
    lifecycle.expire_if_late(participation, now=now)
    if participation.status != Participation.Status.ACTIVE:
        raise StudyRefused("not_active", "This participation has ended.")
    recorded = Participation.objects.filter(pk=participation.pk, consented_at__isnull=True).update(
        consented_at=now
    )
    participation.refresh_from_db()
    return recorded == 1


@transaction.atomic
def complete(*, participation: Participation, now=None) -> Participation:
    """Complete a participation whose work is done and record its reward; completing twice is one
    completion (the second call returns the completed participation and adds nothing).

    The participation's row lock orders this after any event being paid under it.

    Raises:
        StudyRefused: ``not_done`` (with the progress in the message) or ``not_active`` (returned or
            abandoned).
    """
    now = now or timezone.now()
    locked = (
        Participation.objects.select_for_update(of=("self",)).select_related("study").get(pk=participation.pk)
    )
    if locked.status == Participation.Status.COMPLETED:
        return locked
    lifecycle.expire_if_late(locked, now=now)
    if locked.status != Participation.Status.ACTIVE:
        raise StudyRefused("not_active", "This participation has ended; it can no longer be completed.")
    progress = selectors.progress_of(locked)
    if not progress.done:
        raise StudyRefused("not_done", f"Not finished yet: {progress.summary} done.")
    lifecycle.mark_completed(locked, now=now)
    locked.refresh_from_db()
    ledger.record_reward(locked)
    return locked


def return_study(*, participation: Participation, now=None) -> bool:
    """The participant gives the study back (or an owner marks it returned): active → returned once, the
    slot is freed. True if this call made the change; False when it had already ended."""
    return lifecycle.mark_returned(participation, now=now)


def rotate_entry_key(*, study: Study) -> str:
    """Give the study a new entry key (the old link stops working); returns it."""
    key = new_entry_key()
    Study.objects.filter(pk=study.pk).update(entry_key=key)
    study.entry_key = key
    return key
