"""Writes for validation: hand out examples through the queue (claims) and record verdicts (quorum,
owner mode).

Counting rule: an example is settled by exactly one status transition, made under its row lock
(``select_for_update``) through ``annotation.services.settle_example``; every round and user count
is derived from ``Example.status`` (``validation.selectors``), so each example counts once.

Late votes: a verdict on an example that is already settled is refused (``VerdictError`` with code
``settled``) and nothing is stored. Recording it would make agreement statistics depend on timing.

Served votes: a vote counts only on an example served to its validator (``served_to``): otherwise
anyone could send verdicts on any open example by its id, and participants could settle each other's
examples (and bonuses) without the queue ever handing them out. Owner verdicts are not votes.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from annotation.goal import goal_met
from annotation.models import Example
from annotation.services import ExampleError, clean_target, overturn_settlement, settle_example
from core.api.permissions import can_contribute
from core.text_rules import normalise_newlines
from tasks import qualification
from tasks.config import TaskKind
from tasks.models import Round
from tasks.rules import span_model_wrong

from . import selectors, signals
from .gold import selectors as gold_selectors
from .gold import services as gold
from .models import Validation, ValidationClaim

NON_FIELD = "__all__"
MAX_REASON_LENGTH = 2000


class VerdictError(Exception):
    """A verdict that cannot be recorded.

    ``errors`` maps field names (``verdict``, ``corrected_label``, ``reason`` or ``__all__``) to
    messages, like a form's errors. ``code`` names the rule that refused it: ``blocked``, ``invalid``,
    ``own_example``, ``already_validated``, ``retracted``, ``settled``, ``not_open``, ``not_served`` or
    ``not_owner``,
    or one of the task's qualification rules (``tasks.qualification.CODES``: ``blocked``,
    ``not_allowed``, ``held``, ``quiz``, ``daily_cap``); ``qualification`` is True then, and ``url`` the
    page that lifts it (the quiz) or None.
    """

    def __init__(
        self,
        errors: dict[str, list[str]] | str,
        *,
        code: str = "invalid",
        url: str | None = None,
        qualification: bool = False,
    ):
        if isinstance(errors, str):
            errors = {NON_FIELD: [errors]}
        self.errors = errors
        self.code = code
        self.url = url
        self.qualification = qualification
        super().__init__("; ".join(f"{k}: {' '.join(v)}" for k, v in errors.items()))


def _check_qualified(task, validator, *, lock: bool) -> None:
    """The task's qualification rules for validating (``tasks.qualification.check_can_contribute``), as a
    ``VerdictError`` with the rule's code. ``lock`` inside the verdict's transaction (daily cap)."""
    try:
        qualification.check_can_contribute(task, validator, qualification.VALIDATE, lock=lock)
    except qualification.NotQualified as refusal:
        raise VerdictError(refusal.message, code=refusal.code, url=refusal.url, qualification=True) from None


def _record_vote(
    example,
    validator,
    verdict: str,
    corrected_label: str,
    reason: str,
    *,
    owner: bool,
    now,
    rubric_answers=None,
    given_target=None,
):
    """Store one verdict as a new row (never an update of an earlier one) and tell the apps above
    (``signals.validation_recorded``: the crowd ledger pays it). The caller holds the example's row lock."""
    validation = Validation.objects.create(
        example=example,
        validator=validator,
        verdict=verdict,
        corrected_label=corrected_label,
        reason=reason,
        is_owner_verdict=owner,
        rubric_answers=rubric_answers or {},
        given_target=given_target,
        created_at=now,
    )
    signals.validation_recorded.send(sender=Validation, validation=validation)
    return validation


def claim_seconds() -> int:
    """How long a served example stays reserved for its validator (``DYNABENCH_VALIDATION_CLAIM_SECONDS``)."""
    return int(settings.DYNABENCH_VALIDATION_CLAIM_SECONDS)


def grace_seconds() -> int:
    """How long after a served example's claim runs out its validator's verdict on it still counts
    (``DYNABENCH_VALIDATION_GRACE_SECONDS``, default 600; see ``served_to``)."""
    return int(settings.DYNABENCH_VALIDATION_GRACE_SECONDS)


def served_since(now):
    """The earliest ``expires_at`` a claim may have for a verdict sent at ``now`` to count:
    ``now - grace_seconds()`` (an aware datetime)."""
    return now - timedelta(seconds=grace_seconds())


def served_to(example: Example, validator, *, now) -> bool:
    """Whether ``example`` counts as served to ``validator`` at ``now`` (docs/domain.md, "Validation
    queue"): they hold its ``ValidationClaim`` (one row per example, so a claim taken over by another
    validator, or released when they asked for another example, is no longer theirs) and it is live or
    ran out less than ``grace_seconds()`` before ``now``. Gold items: ``gold_selectors.gold_claim_on``
    with the same bound."""
    return ValidationClaim.objects.filter(
        example=example, validator=validator, expires_at__gt=served_since(now)
    ).exists()


NOT_SERVED = (
    "A verdict counts only on an example served to you for validation, and this one is not (or no "
    "longer) reserved for you; nothing was recorded. Ask for the next example to validate."
)


def _take_claim(example_id: int, validator, now, expires_at) -> bool:
    """Reserve one example for ``validator``; False if someone else holds a live claim on it."""
    # An existing claim row is taken over only if it expired or is the validator's own.
    updated = (
        ValidationClaim.objects.filter(example_id=example_id)
        .filter(Q(expires_at__lte=now) | Q(validator=validator))
        .update(validator=validator, expires_at=expires_at, created_at=now)
    )
    if updated:
        return True
    try:
        with transaction.atomic():  # a savepoint: a lost insert race must not abort the outer transaction
            ValidationClaim.objects.create(example_id=example_id, validator=validator, expires_at=expires_at)
    except IntegrityError:
        return False
    return True


#: How many fresh examples the walk takes from its random key, to serve one of them at random.
FRESH_DRAW = 8


def _first_of_queue(round_: Round, validator, now) -> Example | None:
    """The example to serve ``validator`` next, locked (FOR UPDATE SKIP LOCKED), or None when their
    queue is empty: the first of ``selectors.queue_for``, fewest validations first, random among equals.

    First a walk among the examples of the queue that nobody has validated (``selectors.fresh_queue_for``:
    an index walk, not a read of the round): the ``FRESH_DRAW`` first at or after a random key
    (``Example.queue_key``, drawn when the example was made), going on from the lowest key when there
    are fewer above it, and one of those at random. Keys are random, so which examples come first does
    not depend on the order they were written and validated in; taking one of 8 evens out the gaps
    between keys, and with 8 fresh examples or fewer each is equally likely. Only the one served is
    locked, until its claim is stored. Only when none is fresh (or all 8 are being claimed at that moment)
    is the whole queue ordered by count."""
    fresh = selectors.fresh_queue_for(round_, validator, now=now)
    start = random.random()
    drawn = list(fresh.filter(queue_key__gte=start).values_list("pk", flat=True)[:FRESH_DRAW])
    if len(drawn) < FRESH_DRAW:
        drawn += fresh.filter(queue_key__lt=start).values_list("pk", flat=True)[: FRESH_DRAW - len(drawn)]
    random.shuffle(drawn)
    for pk in drawn:
        # One of them, locked by its id; the others stay free for a validator asking at the same moment.
        candidate = (
            selectors.fresh_example(round_, validator, pk, now=now)
            .select_for_update(skip_locked=True, of=("self",))
            .first()
        )
        if candidate is not None and candidate.round_id == round_.pk:
            return candidate
    return (
        selectors.queue_for(round_, validator, now=now)
        .select_for_update(skip_locked=True, of=("self",))
        .first()
    )


def next_example(*, round_: Round, validator, now=None) -> Example | None:
    """Serve ``validator`` the next example of ``round_`` to validate, reserved for them.

    A validator holds at most one claim per round: asking again while their claim is live returns
    the same example (a reload does not skip it); otherwise their old claims in the round are
    released and the first example of ``selectors.queue_for`` is claimed until now +
    ``claim_seconds()``.

    Returns:
        The example, annotated with ``n_validations`` when newly served, or None when the queue is
        empty (``selectors.queue_summary`` says why).

    Raises:
        VerdictError: (code ``blocked``) for anonymous, inactive or blocked users; a qualification code
            when the task's rules refuse the validator (``_check_qualified``).
    """
    if not can_contribute(validator):
        raise VerdictError("Your account cannot validate examples.", code="blocked")
    _check_qualified(round_.task, validator, lock=False)
    now = now or timezone.now()
    expires_at = now + timedelta(seconds=claim_seconds())
    with transaction.atomic():
        # One ask at a time per validator: two tabs asking at the same moment each found no live claim and
        # took one each, two examples held for one person. The second now waits for the first to commit
        # and is served its claim.
        list(get_user_model().objects.select_for_update().filter(pk=validator.pk).values_list("pk"))
        held = selectors.live_claim_of(round_, validator, now=now)
        if held is not None:
            ValidationClaim.objects.filter(pk=held.pk).update(expires_at=expires_at)
            return held.example
        # Gold items (validation.gold) are mixed in at the task's gold_share, served like any example.
        held_gold = gold.held_gold(round_=round_, validator=validator, now=now, expires_at=expires_at)
        if held_gold is not None:
            return held_gold
        ValidationClaim.objects.filter(validator=validator, example__round=round_).delete()
        served_gold = gold.serve_gold(round_=round_, validator=validator, now=now, expires_at=expires_at)
        if served_gold is not None:
            return served_gold
        # Race handling: two validators asking at once each lock their candidate row with
        # FOR UPDATE SKIP LOCKED, so the second skips the row the first is claiming and takes the next
        # one instead of waiting for it or getting it too. The lock lasts only this transaction; after
        # it the claim row keeps the example out of other queues. A claimer whose query snapshot
        # predates a just-committed claim can still reach that row, so the claim itself is taken with
        # a conditional UPDATE (only if expired or ours) or an INSERT guarded by the one-claim-per-
        # example constraint: exactly one of them wins, and the loser moves on to another candidate.
        for _attempt in range(5):
            candidate = _first_of_queue(round_, validator, now)
            if candidate is None:
                return None
            if _take_claim(candidate.pk, validator, now, expires_at):
                return candidate
    return None


def release_claims(*, validator, round_: Round | None = None) -> int:
    """Drop ``validator``'s claims (in ``round_`` only, when given); returns how many were dropped."""
    qs = ValidationClaim.objects.filter(validator=validator)
    if round_ is not None:
        qs = qs.filter(example__round=round_)
    return qs.delete()[0]


@dataclass(frozen=True)
class VerdictOutcome:
    """What a recorded verdict did: the stored ``validation``; ``settled`` is True when this very
    verdict settled the example; ``status`` is the example's status afterwards."""

    validation: Validation
    settled: bool
    status: str
    # A verdict on a gold item served as gold: ``validation`` is then the stored ``GoldAnswer`` (same
    # fields the responses read), ``settled`` False and ``status`` pending, as for a vote short of quorum.
    gold: bool = False


def _clean(example: Example, verdict: str, corrected_label: str, reason: str) -> tuple[str, str]:
    errors: dict[str, list[str]] = {}
    if verdict not in Validation.Verdict.values:
        errors.setdefault("verdict", []).append(
            f"Choose one of: {', '.join(Validation.Verdict.values)} (got {verdict!r})."
        )
    corrected_label = (corrected_label or "").strip()
    if corrected_label:
        labels = example.round.task.cfg.labels
        if not labels:
            errors.setdefault("corrected_label", []).append("This task's target is not a label.")
        elif corrected_label not in labels:
            errors.setdefault("corrected_label", []).append(f"Choose one of: {', '.join(labels)}.")
        elif verdict != Validation.Verdict.INCORRECT:
            errors.setdefault("corrected_label", []).append(
                "Only an 'incorrect' verdict takes a corrected label."
            )
        elif corrected_label == example.target:
            errors.setdefault("corrected_label", []).append(
                "The corrected label is the label the author chose."
            )
    reason = normalise_newlines(reason or "")
    if len(reason) > MAX_REASON_LENGTH:
        errors.setdefault("reason", []).append(f"At most {MAX_REASON_LENGTH:,} characters.")
    if errors:
        raise VerdictError(errors, code="invalid")
    return corrected_label, reason


def is_rubric_example(example: Example) -> bool:
    """True for an example validated by the task's rubric: a red-teaming conversation."""
    return (example.metadata or {}).get("mode") == "conversation"


def rubric_verdict(example: Example, verdict: str, rubric_answers) -> tuple[str, dict]:
    """The verdict a validator's rubric answers give on a red-teaming conversation, and the answers
    cleaned: ``correct`` when their answers judge the output as its author did (failed, by
    ``tasks.rubric.Rubric.failed``, exactly when the author's did), ``incorrect`` otherwise. A rating
    example (a replayed model's answer, ``generative_bench.replay``) has no author's judgement
    (``model_wrong`` None, taken as "did not fail"): ``correct`` when the validator finds the output did
    not fail, so one settled ``validated_incorrect`` is an answer people judged failed. A
    ``flagged`` verdict takes no answers; any other ``verdict`` sent is ignored, the answers decide
    (the validator never sees the author's answers: docs/generative.md, "Validation by rubric").

    Raises:
        VerdictError: ``invalid``, with the rubric's problems under ``rubric``.
    """
    if verdict == Validation.Verdict.FLAGGED:
        return verdict, {}
    rubric = example.round.task.cfg.rubric
    try:
        answers = rubric.clean(rubric_answers)
    except ValidationError as exc:
        raise VerdictError({"rubric": exc.messages}, code="invalid") from None
    agrees = rubric.failed(answers) == bool(example.model_wrong)
    return (Validation.Verdict.CORRECT if agrees else Validation.Verdict.INCORRECT), answers


def is_given_target_example(example: Example) -> bool:
    """True for an example its validators judge by giving the target themselves, unanchored: an example
    of a task in uncertainty mode (``tasks.uncertainty``; docs/domain.md, "Uncertainty mode"). Seeing the
    author's label, or the model's unsure answer, would anchor them; the label must be clear to people
    who have not seen it."""
    return example.round.task.cfg.uncertainty is not None


def _same_label(cfg, authors, given) -> bool:
    return given == authors


def _same_span(cfg, authors, given) -> bool:
    # The rule that decides whether a QA example fooled the model: SQuAD F1 at or above the threshold.
    return not span_model_wrong(target=authors, output=given, threshold=cfg.string_f1_threshold)


#: What a validator gives in uncertainty mode, per task kind, for messages.
_TARGET_NOUN = {TaskKind.CLASSIFICATION: "label", TaskKind.SPAN: "answer"}

#: Whether a validator's own target agrees with the author's, per task kind.
_AGREES_WITH_AUTHOR = {TaskKind.CLASSIFICATION: _same_label, TaskKind.SPAN: _same_span}


def given_target_verdict(example: Example, verdict: str, given_target) -> tuple[str, object, str]:
    """The verdict a validator's own target gives on an example of uncertainty mode
    (``is_given_target_example``): ``correct`` when it agrees with the author's (the same label; for a
    span, SQuAD F1 at least the task's ``string_f1`` threshold, 0.4 by default), ``incorrect``
    otherwise, with their label as the corrected label. ``flagged`` takes no target; any other
    ``verdict`` sent is ignored, the target decides. An example counts (validated) when ``quorum``
    validators agree with its author's label, so its label is one people agree on without having seen it.

    Returns:
        ``(verdict, given target cleaned, corrected label)``: the target a label, or
        ``{"answer", "answer_start"}`` for a span resolved in the passage (``annotation.services.clean_target``).

    Raises:
        VerdictError: ``invalid``, under ``given_target``: no target, a label not among the task's, a
            span not in the passage.
    """
    if verdict == Validation.Verdict.FLAGGED:
        return verdict, None, ""
    cfg = example.round.task.cfg
    if given_target is None or given_target == "" or given_target == {}:
        raise VerdictError(
            {"given_target": [f"Give the {_TARGET_NOUN[cfg.kind]} you judge right."]},
            code="invalid",
        )
    try:
        given = clean_target(cfg, given_target, context=example.context)
    except ExampleError as exc:
        raise VerdictError(
            {"given_target": [m for messages in exc.errors.values() for m in messages]}, code="invalid"
        ) from None
    if _AGREES_WITH_AUTHOR[cfg.kind](cfg, example.target, given):
        return Validation.Verdict.CORRECT, given, ""
    return Validation.Verdict.INCORRECT, given, given if isinstance(given, str) else ""


def _gold_verdict(locked: Example, validator, verdict: str, corrected_label: str, reason: str, now):
    """A verdict on an example served to ``validator`` as gold (``validation.gold``; their gold claim live
    or run out less than ``grace_seconds()`` ago, the rule of ``served_to``): stored as a ``GoldAnswer``
    and answered as a real vote that did not settle would be (``settled`` False, status pending), or
    ``already_validated`` for a second one; None when it was not served to them as gold (then it is
    judged as any other example, and refused as not served unless they hold its ordinary claim)."""
    claim = gold_selectors.gold_claim_on(locked, validator, expires_after=served_since(now))
    if claim is None:
        if gold_selectors.has_gold_answer(locked, validator):
            raise VerdictError("You have already validated this example.", code="already_validated")
        return None
    answer = gold.record_gold_answer(
        claim=claim,
        validator=validator,
        verdict=verdict,
        corrected_label=corrected_label,
        reason=reason,
        now=now,
    )
    if answer is None:
        raise VerdictError("You have already validated this example.", code="already_validated")
    return VerdictOutcome(validation=answer, settled=False, status=Example.Status.PENDING, gold=True)


@transaction.atomic
def submit_validation(
    *,
    example: Example,
    validator,
    verdict: str,
    corrected_label: str = "",
    reason: str = "",
    owner_mode: bool = False,
    now=None,
    rubric_answers=None,
    given_target=None,
) -> VerdictOutcome:
    """Record ``validator``'s verdict on ``example`` and settle the example when it reaches quorum.

    A red-teaming conversation (``is_rubric_example``) is judged by ``rubric_answers``, the validator's
    answers to the task's rubric, which give the verdict (``rubric_verdict``); ``flagged`` takes none.
    An example of a task in uncertainty mode (``is_given_target_example``) is judged by ``given_target``,
    the validator's own label or span, which gives the verdict and corrected label
    (``given_target_verdict``).

    ``task.validation_quorum`` matching ordinary verdicts settle it (``correct`` → validated_correct,
    ``incorrect`` → validated_incorrect, ``flagged`` → flagged); one verdict in ``owner_mode`` (task
    owners only) settles it at once. Every verdict is a new row stamped ``now`` (default the current
    time), and a settlement it makes is stamped the same: an owner verdict is a row of its own, marked
    ``is_owner_verdict``, beside that owner's earlier ordinary vote, which stays as it was.
    The example row is locked for the whole count-and-settle, so concurrent votes are counted one
    after another and the example is settled exactly once. The validator's claim on it is released.

    A vote (not ``owner_mode``) counts only on an example served to ``validator`` (``served_to``: their
    claim, live or run out less than ``grace_seconds()`` before ``now``, not taken over; a gold item
    through their gold claim, with the same bound). This is the one place votes enter, so the validate
    page, the API and any other caller are held to it; owner verdicts need no serving.

    Returns:
        ``VerdictOutcome(validation, settled, status)``.

    Raises:
        VerdictError: blocked or anonymous validator (``blocked``); unknown verdict, corrected label
            not a task label or given with another verdict than ``incorrect``, reason too long
            (``invalid``); their own example (``own_example``); a second verdict on one example
            (``already_validated``); retracted (``retracted``); already settled, including late
            votes (``settled``); a non-fooling example when the task validates only model-fooling
            ones, or an imported one (``not_open``); a vote on an example not served to the validator
            (``not_served``, checked after the others, whose answers tell a validator who was served
            it what happened since); owner mode by a non-owner (``not_owner``); the
            task's qualification rules (``blocked``, ``not_allowed``, ``held``, ``quiz``, ``daily_cap``,
            with ``qualification`` True).
    """
    if not can_contribute(validator):
        raise VerdictError("Your account cannot validate examples.", code="blocked")
    now = now or timezone.now()
    # Lock the example row (only it: of=self) before reading anything the decision depends on.
    locked = Example.objects.select_for_update(of=("self",)).select_related("round__task").get(pk=example.pk)
    task = locked.round.task
    # Locks the validator's TaskWorker row before counting today's verdicts (the daily cap), so two
    # verdicts sent at once at the cap are counted one after the other. Owners are exempt.
    _check_qualified(task, validator, lock=True)
    answers = {}
    # An owner settling from the admin gives a plain verdict; everyone else answers the rubric.
    if is_rubric_example(locked) and not (owner_mode and rubric_answers is None):
        verdict, answers = rubric_verdict(locked, verdict, rubric_answers)
    given = None
    if is_given_target_example(locked) and not (owner_mode and given_target is None):
        verdict, given, corrected_label = given_target_verdict(locked, verdict, given_target)
    corrected_label, reason = _clean(locked, verdict, corrected_label, reason)
    if owner_mode and not task.is_owner(validator):
        raise VerdictError("Only the task's owners can settle an example in owner mode.", code="not_owner")
    if not owner_mode:
        gold_outcome = _gold_verdict(locked, validator, verdict, corrected_label, reason, now)
        if gold_outcome is not None:
            return gold_outcome
    if locked.annotator_id is not None and locked.annotator_id == validator.pk:
        raise VerdictError("You cannot validate your own example.", code="own_example")
    if locked.is_retracted:
        raise VerdictError("This example was retracted by its author.", code="retracted")
    if locked.status != Example.Status.PENDING:
        raise VerdictError(
            f"This example is already settled ({locked.get_status_display().lower()}).", code="settled"
        )
    # A rating example (a replayed model's answer, model_wrong None) is open whatever validate_non_fooling.
    if locked.source == Example.Source.IMPORTED or (
        not owner_mode
        and not goal_met(locked, task.cfg)
        and not task.cfg.validate_non_fooling
        and locked.source != Example.Source.RATING
    ):
        raise VerdictError("This example is not open for validation.", code="not_open")

    if (
        not owner_mode
        and Validation.objects.filter(example=locked, validator=validator, is_owner_verdict=False).exists()
    ):
        raise VerdictError("You have already validated this example.", code="already_validated")
    # Last, so that the refusals above still tell a validator who was served the example (and whose
    # claim goes with their vote) what happened to it; they tell nothing to anyone else, who reaches this
    # service only for an example visible to them, voted on or claimed by them (selectors.verdict_examples).
    if not owner_mode and not served_to(locked, validator, now=now):
        raise VerdictError(NOT_SERVED, code="not_served")
    # Always a new row, never an update of an earlier one. The row lock serialises one person's double
    # submit too; the unique constraints (one ordinary vote per example and validator, one owner verdict
    # per example) stay the last line of defence.
    validation = _record_vote(
        locked,
        validator,
        verdict,
        corrected_label,
        reason,
        owner=owner_mode,
        now=now,
        rubric_answers=answers,
        given_target=given,
    )

    matching = Validation.objects.filter(example=locked, verdict=verdict, is_owner_verdict=False).count()
    settled = False
    if owner_mode or matching >= task.validation_quorum:
        settled = settle_example(locked.pk, selectors.STATUS_OF_VERDICT[verdict], now=now)
        if settled:
            signals.example_settled.send(
                sender=Example,
                example=locked,
                status=selectors.STATUS_OF_VERDICT[verdict],
                previous=locked.status,
            )
    # Only the voter's own claim goes: a validator who was served the example and holds its claim is
    # still told, when they send their verdict, that it was settled meanwhile (selectors.verdict_examples);
    # a claim on a settled example is never served again and goes when its holder asks for the next one.
    ValidationClaim.objects.filter(example=locked, validator=validator).delete()
    status = selectors.STATUS_OF_VERDICT[verdict] if settled else locked.status
    return VerdictOutcome(validation=validation, settled=settled, status=status)


@transaction.atomic
def overturn_verdict(*, example: Example, owner, verdict: str, reason: str = "", now=None) -> VerdictOutcome:
    """A task owner overturns an example settled by quorum: their owner verdict (a row of its own, stamped
    ``now``) gives it another settled status (``annotation.services.overturn_settlement``), and
    ``signals.example_settled`` tells the apps above (the crowd ledger reverses or adds a bonus).

    An example has at most one owner verdict, so one already settled by an owner verdict cannot be
    overturned again. Votes are never changed: the quorum's verdicts stay as they were.

    Returns:
        ``VerdictOutcome(validation, settled=True, status)``.

    Raises:
        VerdictError: not an owner (``not_owner``); unknown verdict or bad reason (``invalid``); the
            example is pending (``not_settled``: settle it with an owner verdict instead), retracted
            (``retracted``), already has this status or an owner verdict (``settled``).
    """
    now = now or timezone.now()
    locked = Example.objects.select_for_update(of=("self",)).select_related("round__task").get(pk=example.pk)
    if not locked.round.task.is_owner(owner):
        raise VerdictError(selectors.NOT_OWNER_TO_OVERTURN, code="not_owner")
    corrected_label, reason = _clean(locked, verdict, "", reason)
    refused = selectors.overturn_refusal(locked, verdict)
    if refused is not None:
        code, message = refused
        raise VerdictError(message, code=code)
    status = selectors.STATUS_OF_VERDICT[verdict]
    validation = _record_vote(locked, owner, verdict, corrected_label, reason, owner=True, now=now)
    previous = locked.status
    changed = overturn_settlement(locked.pk, status, previous=previous, now=now)
    if changed:
        signals.example_settled.send(sender=Example, example=locked, status=status, previous=previous)
    return VerdictOutcome(validation=validation, settled=changed, status=status if changed else previous)
