"""Reads for validation: the queue of examples a validator may judge, the owner review list, and
per-annotator statistics.

Every count here is derived from ``Example.status`` and the ``Validation`` rows, never from a
counter kept beside them: an example has exactly one status, so it is counted exactly once
whatever the order or concurrency of the votes that settled it.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import (
    Count,
    Exists,
    IntegerField,
    Min,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    Subquery,
    Value,
)
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotation import selectors as annotation_selectors
from annotation.goal import goal_met_q
from annotation.models import Example
from core.text_rules import ascii_id
from tasks.models import Round, Task

from .models import GoldAnswer, GoldClaim, GoldItem, Validation, ValidationClaim

# The settled status a verdict stands for (docs/domain.md, "Quorum").
STATUS_OF_VERDICT: dict[str, str] = {
    Validation.Verdict.CORRECT: Example.Status.VALIDATED_CORRECT,
    Validation.Verdict.INCORRECT: Example.Status.VALIDATED_INCORRECT,
    Validation.Verdict.FLAGGED: Example.Status.FLAGGED,
}

_AGREES = Q()
for _verdict, _status in STATUS_OF_VERDICT.items():
    _AGREES |= Q(verdict=_verdict, example__status=_status)


def _n_validations() -> Subquery:
    """Validations of the outer example, as a scalar subquery (a GROUP BY would forbid FOR UPDATE)."""
    counted = (
        Validation.objects.filter(example=OuterRef("pk"))
        .order_by()
        .values("example")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return Coalesce(Subquery(counted, output_field=IntegerField()), Value(0))


def _open(task: Task, **where) -> QuerySet[Example]:
    """Examples of ``task`` open for validation (see ``open_examples``), filtered by ``where``."""
    qs = annotation_selectors.validatable_examples().filter(status=Example.Status.PENDING, **where)
    # A gold item's verdict is known: it is served only as gold (validation.gold.selectors.gold_queue_for).
    qs = qs.exclude(pk__in=GoldItem.objects.filter(retired_at__isnull=True).values("example_id"))
    if not task.cfg.validate_non_fooling:
        # A rating example (a replayed model's answer) has no model verdict to be fooled by: it is served
        # for people to judge by the rubric whatever validate_non_fooling says.
        qs = qs.filter(goal_met_q(task.cfg) | Q(source=Example.Source.RATING))
    return qs


def open_examples(round_: Round) -> QuerySet[Example]:
    """Examples of ``round_`` still open for validation by anyone.

    Not retracted, not settled (``pending``; imported examples are stored settled), not imported,
    not an active gold item (served only as gold), and model-fooling unless the task's config sets
    ``validate_non_fooling``; rating examples (``annotation.selectors.validatable_examples``) whatever
    it sets.
    """
    return _open(round_.task, round=round_)


def open_examples_of_task(task: Task) -> QuerySet[Example]:
    """Examples of every round of ``task`` still open for validation (the rule of ``open_examples``);
    group by ``round_id`` for a count per round in one query (the owner's dashboard)."""
    return _open(task, round__task=task)


def verdict_examples(task: Task, user) -> QuerySet[Example]:
    """The examples of ``task`` that ``user`` may send a verdict on and be told the state of
    (docs/domain.md, "Visibility"); the verdict views look the posted id up here, so any other example
    is answered exactly as an id that does not exist (404), and no refusal tells its state.

    Those are: the examples ``annotation.selectors.examples_visible_to`` shows them (their own, every
    example of a task they own, all for superusers: the rule of ``GET /api/examples/{id}/``); those
    they gave a verdict on (so
    a second tab hears "already recorded" and a late vote "already settled"); and the one they hold a
    claim on, live or expired but not taken over (so a validator served an example hears that it was
    settled or retracted meanwhile); and the gold items served to them as gold or
    answered as gold (``validation.gold``), so a gold item answers like any other example. None for
    anonymous users.

    An example open for validation but never served to them is not among them: answering it with "not
    reserved for you" would tell anyone which ids are pending in an open round.
    """
    return _verdict_examples(annotation_selectors.examples_of_task(task), user)


def verdict_examples_of_active_tasks(user) -> QuerySet[Example]:
    """``verdict_examples`` of every active task at once, each example's ``round__task`` joined: the API's
    verdict endpoints look a posted id up here in one query, not one to find its task and one to apply
    the rule."""
    return _verdict_examples(annotation_selectors.examples_of_active_tasks(), user)


def _verdict_examples(examples: QuerySet[Example], user) -> QuerySet[Example]:
    """``examples`` less those ``user`` may not send a verdict on (``verdict_examples``' rule)."""
    if not user.is_authenticated:
        return examples.none()
    # Exists on the outer row's id, not ``pk__in``: inside the OR, PostgreSQL ran an IN subquery as a
    # hashed scan of every example visible to the user (all of them for a superuser).
    visible = annotation_selectors.examples_visible_to(user).filter(pk=OuterRef("pk"))
    voted = Validation.objects.filter(example=OuterRef("pk"), validator=user)
    claimed = ValidationClaim.objects.filter(example=OuterRef("pk"), validator=user)
    # Gold items served to them as gold, or answered as gold, answer as any served or voted example.
    gold_claimed = GoldClaim.objects.filter(gold__example=OuterRef("pk"), validator=user)
    gold_answered = GoldAnswer.objects.filter(gold__example=OuterRef("pk"), validator=user)
    return examples.filter(
        Exists(visible) | Exists(voted) | Exists(claimed) | Exists(gold_claimed) | Exists(gold_answered)
    )


def validatable_by(round_: Round, user) -> QuerySet[Example]:
    """Open examples of ``round_`` that ``user`` may judge: not their own, not already judged by them
    (nor answered by them as gold).

    Claims are not considered here (see ``queue_for``).
    """
    return _judgeable_by(open_examples(round_), user)


def _judgeable_by(examples: QuerySet[Example], user) -> QuerySet[Example]:
    """``examples`` less those ``user`` wrote, judged, or answered as gold (the user's part of
    ``validatable_by``)."""
    mine = Validation.objects.filter(example=OuterRef("pk"), validator=user)
    answered_as_gold = GoldAnswer.objects.filter(gold__example=OuterRef("pk"), validator=user)
    return examples.exclude(annotator=user).exclude(Exists(mine)).exclude(Exists(answered_as_gold))


def _claimed_by_others(user, now) -> QuerySet[ValidationClaim]:
    """Live claims (at ``now``) of validators other than ``user`` on the outer example, for ``Exists``."""
    return ValidationClaim.objects.filter(example=OuterRef("pk"), expires_at__gt=now).exclude(validator=user)


def queue_for(round_: Round, user, *, now=None) -> QuerySet[Example]:
    """The validation queue of ``user`` in ``round_``, in serving order.

    ``validatable_by`` minus examples another validator holds a live claim on; annotated with
    ``n_validations``; ordered fewest validations first, random among equals. Has no GROUP BY, so
    it can be locked with ``select_for_update``.
    """
    return (
        validatable_by(round_, user)
        .exclude(Exists(_claimed_by_others(user, now or timezone.now())))
        .annotate(n_validations=_n_validations())
        .order_by("n_validations", "?")
    )


def _fresh(examples: QuerySet[Example], user, now) -> QuerySet[Example]:
    """``examples`` less those ``user`` may not judge, those anybody has validated and those another
    validator holds a live claim on; annotated ``n_validations`` 0."""
    anyones = Validation.objects.filter(example=OuterRef("pk"))
    return (
        _judgeable_by(examples, user)
        .exclude(Exists(anyones))
        .exclude(Exists(_claimed_by_others(user, now)))
        .annotate(n_validations=Value(0, output_field=IntegerField()))
    )


def fresh_queue_for(round_: Round, user, *, now=None) -> QuerySet[Example]:
    """The head of ``queue_for`` whenever it is not empty: its examples that nobody has validated yet
    (so each has the fewest validations there can be), in the order of their ``queue_key``, annotated
    ``n_validations`` 0.

    Walked from a random key (``validation.services.next_example``), it serves one of them without
    reading the round: the index on (round, status, queue_key) gives the order, and the walk stops after
    the first few examples that pass the rules, after about as many rows for each as there are pending
    examples for each fresh one. Read the whole queue instead, ordering the round's open examples by their
    count took 66.5 ms at 16,000 open examples (docs/serving.md, "Many streams per worker")."""
    return _fresh(open_examples(round_), user, now or timezone.now()).order_by("queue_key")


def fresh_example(round_: Round, user, pk: int, *, now=None) -> QuerySet[Example]:
    """Example ``pk`` if it is one of ``fresh_queue_for`` but for its round: the caller compares
    ``round_id``. Without the round's filter PostgreSQL finds it by its primary key; with it, on a round
    it had not analyzed yet, it read the round's pending examples through the (round, status, queue_key)
    index (1,000 rows for one in the test)."""
    return _fresh(_open(round_.task, pk=pk), user, now or timezone.now())


@dataclass(frozen=True)
class QueueSummary:
    """Why a validator's queue is empty: open examples of the round they cannot be served, and what the
    round holds.

    ``open`` counts every open example of the round; ``own`` those they wrote; ``judged`` those they
    already validated; ``claimed`` those other validators hold right now. ``written`` counts the round's
    written examples (not imported, not retracted) and ``pending`` those of them still pending (open or
    not: not model-fooling where only those are validated, not scored yet, or gold items).
    """

    open: int
    own: int
    judged: int
    claimed: int
    written: int = 0
    pending: int = 0

    #: ``reason``'s values, for the page and the API alike.
    REASONS = ("unavailable", "nothing_written", "none_open", "settled")

    @property
    def unavailable(self) -> int:
        return self.own + self.judged + self.claimed

    @property
    def reason(self) -> str:
        """Why nothing was served, one of ``REASONS``: ``unavailable`` (open examples, but each the
        caller's own, judged by them or held by another: the counts say which), ``nothing_written``
        (nobody has written an example in the round), ``none_open`` (pending examples, none open for
        validation) or ``settled`` (every written example that needed validation is settled)."""
        if self.open:
            return "unavailable"
        if not self.written:
            return "nothing_written"
        return "none_open" if self.pending else "settled"


def queue_summary(round_: Round, user, *, now=None) -> QueueSummary:
    """``QueueSummary`` of ``user``'s empty queue in ``round_`` (two count queries)."""
    now = now or timezone.now()
    mine = Validation.objects.filter(example=OuterRef("pk"), validator=user)
    claimed = _claimed_by_others(user, now)
    own = Q(annotator=user)
    judged = ~own & Q(Exists(mine))
    counts = open_examples(round_).aggregate(
        open=Count("pk"),
        own=Count("pk", filter=own),
        judged=Count("pk", filter=judged),
        claimed=Count("pk", filter=~own & ~Q(Exists(mine)) & Q(Exists(claimed))),
    )
    held = round_pending(round_)
    return QueueSummary(**counts, written=held.written, pending=held.pending)


@dataclass(frozen=True)
class RoundPending:
    """Why a round has no open example at all: ``written`` its examples that were written (not
    imported, not retracted); ``pending`` those of them still pending, which are then not open for
    validation (not model-fooling where only those are validated, not scored yet, or gold items)."""

    written: int
    pending: int


def round_pending(round_: Round) -> RoundPending:
    """``RoundPending`` of ``round_`` (one count query), for the page that says the queue is empty."""
    written = Example.objects.filter(round=round_, is_retracted=False).exclude(source=Example.Source.IMPORTED)
    return RoundPending(
        **written.aggregate(written=Count("pk"), pending=Count("pk", filter=Q(status=Example.Status.PENDING)))
    )


def earliest_claim_expiry(round_: Round, user, *, now=None):
    """When the first live claim of another validator on an example of ``round_`` that ``user`` could
    otherwise validate (``validatable_by``) runs out: an aware datetime, or None when there is none."""
    now = now or timezone.now()
    return (
        ValidationClaim.objects.filter(
            expires_at__gt=now, example__in=validatable_by(round_, user).values("pk")
        )
        .exclude(validator=user)
        .aggregate(first=Min("expires_at"))["first"]
    )


@dataclass(frozen=True)
class ClaimWait:
    """An empty queue that only others' claims keep empty: ``seconds`` (at least 1) until the first of
    them runs out; ``everything`` when every open example of the round is claimed by others (none is
    the validator's own or already judged by them)."""

    seconds: int
    everything: bool

    @property
    def minutes(self) -> int:
        """``seconds`` rounded up to whole minutes."""
        return -(-self.seconds // 60)

    @property
    def heading(self) -> str:
        which = "Every open example" if self.everything else "Every open example you can validate"
        return f"{which} is being validated by someone else right now"

    @property
    def hint(self) -> str:
        """The heading and when to come back, as one sentence."""
        unit = "minute" if self.minutes == 1 else "minutes"
        return f"{self.heading}; come back in about {self.minutes} {unit}."


def claim_wait(round_: Round, user, summary: QueueSummary, *, now=None) -> ClaimWait | None:
    """The ``ClaimWait`` of ``user``'s empty queue in ``round_`` (``summary`` its ``queue_summary``),
    or None when no claim of another validator keeps an example from them."""
    if not summary.claimed:
        return None
    now = now or timezone.now()
    first = earliest_claim_expiry(round_, user, now=now)
    if first is None:
        return None
    seconds = max(1, int(-(-(first - now).total_seconds() // 1)))
    return ClaimWait(seconds=seconds, everything=summary.claimed == summary.open)


@dataclass(frozen=True)
class Progress:
    """A validator's progress in a round: ``validated`` their own (not owner-mode) verdicts on its
    examples; ``waiting`` the examples their queue holds now (``queue_for``, the one served included)."""

    validated: int
    waiting: int


def progress_of_validator(round_: Round, user, *, now=None) -> Progress:
    """``Progress`` of ``user`` in ``round_`` (two count queries)."""
    validated = Validation.objects.filter(
        validator=user, example__round=round_, is_owner_verdict=False
    ).count()
    return Progress(validated=validated, waiting=queue_for(round_, user, now=now).order_by().count())


def live_claim_of(round_: Round, user, *, now=None) -> ValidationClaim | None:
    """``user``'s unexpired claim in ``round_`` whose example is still validatable by them, if any.

    Asked on every request for the next example, so its cost must not grow with the round. Their live
    claims are read first (a few: ``next_example`` keeps one per round), then each claim's example by its
    id, checked against the rule of ``validatable_by`` without the round's filter (the round is compared
    after). One query asking for claims whose example is ``in`` the validatable set, or an id check with
    the round's filter, let PostgreSQL scan the round's open examples whenever its statistics lagged
    behind a growing round: 4,002 example rows read for one claim at 2,001 open examples
    (docs/serving.md, "Many streams per worker")."""
    now = now or timezone.now()
    task = round_.task
    for claim in ValidationClaim.objects.filter(validator=user, expires_at__gt=now):
        example = _judgeable_by(_open(task, pk=claim.example_id), user).first()
        if example is not None and example.round_id == round_.pk:
            claim.example = example
            return claim
    return None


# ---------------------------------------------------------------------------------------------------
# Owner review


REVIEW_FILTERS = ("flags", "disagreement", "all")
REVIEW_STATES = ("pending", "settled", "any")


def review_examples(task: Task, *, show: str = "flags", state: str = "pending", round_: Round | None = None):
    """Examples of ``task`` for its owners' review page, newest first.

    Args:
        show: ``flags`` (a ``flagged`` verdict or the author's own flag), ``disagreement`` (both
            ``correct`` and ``incorrect`` verdicts present) or ``all``.
        state: ``pending``, ``settled`` or ``any``.
        round_: only this round, or every round when None.

    Returns:
        A queryset annotated with ``n_correct``, ``n_incorrect`` and ``n_flagged`` verdict counts.
        Imported examples are left out (they were settled by their source dataset).

    Raises:
        ValueError: for an unknown ``show`` or ``state``.
    """
    if show not in REVIEW_FILTERS or state not in REVIEW_STATES:
        raise ValueError(f"unknown review filter {show!r} / {state!r}")
    qs = (
        annotation_selectors.collected_examples()
        .filter(round__task=task)
        .select_related("round", "context", "annotator")
        .annotate(
            n_correct=Count("validations", filter=Q(validations__verdict=Validation.Verdict.CORRECT)),
            n_incorrect=Count("validations", filter=Q(validations__verdict=Validation.Verdict.INCORRECT)),
            n_flagged=Count("validations", filter=Q(validations__verdict=Validation.Verdict.FLAGGED)),
        )
        .prefetch_related(
            Prefetch("validations", queryset=Validation.objects.select_related("validator").order_by("id"))
        )
        .order_by("-created_at", "-id")
    )
    if round_ is not None:
        qs = qs.filter(round=round_)
    if state == "pending":
        qs = qs.filter(status=Example.Status.PENDING)
    elif state == "settled":
        qs = qs.exclude(status=Example.Status.PENDING)
    if show == "flags":
        qs = qs.filter(Q(n_flagged__gt=0) | Q(is_flagged_by_annotator=True))
    elif show == "disagreement":
        qs = qs.filter(n_correct__gt=0, n_incorrect__gt=0)
    return qs


# ---------------------------------------------------------------------------------------------------
# Overturning a settled example (validation.services.overturn_verdict)

NOT_OWNER_TO_OVERTURN = "Only the task's owners can overturn a settled example."


def overturn_refusal(example: Example, verdict: str) -> tuple[str, str] | None:
    """Why ``example`` cannot be overturned to ``verdict`` (one of ``Validation.Verdict``), as
    ``(code, message)`` with the codes of ``services.VerdictError``, or None when it can: retracted
    (``retracted``), still pending (``not_settled``), already of that status or settled by an owner
    verdict, which is final (``settled``). Ownership is the caller's check (``NOT_OWNER_TO_OVERTURN``).
    The service asks it under the example's row lock; the confirmation page asks it beforehand."""
    if example.is_retracted:
        return "retracted", "This example was retracted by its author."
    if example.status == Example.Status.PENDING:
        return "not_settled", "This example is not settled yet; give an owner verdict instead."
    if STATUS_OF_VERDICT[verdict] == example.status:
        return "settled", f"This example is already {example.get_status_display().lower()}."
    if Validation.objects.filter(example=example, is_owner_verdict=True).exists():
        return "settled", "An owner verdict already settled this example, and an owner verdict is final."
    return None


@dataclass(frozen=True)
class OverturnRow:
    """One example on the overturn confirmation page: its ``status`` now and ``new_status`` after
    (``Example.Status`` values), and ``refusal``, the message saying why it will be left as it is
    (None when it will change). ``verified_before`` / ``verified_after``: whether it counts as a verified
    model-fooling example (model-fooling and validated correct: what earns a crowd author's bonus)
    before and after."""

    example: Example
    status: str
    new_status: str
    refusal: str | None

    @property
    def verified_before(self) -> bool:
        return self.example.model_wrong is True and self.status == Example.Status.VALIDATED_CORRECT

    @property
    def verified_after(self) -> bool:
        return self.example.model_wrong is True and self.new_status == Example.Status.VALIDATED_CORRECT

    @property
    def status_label(self) -> str:
        return Example.Status(self.status).label

    @property
    def new_status_label(self) -> str:
        return Example.Status(self.new_status).label


def overturn_preview(examples: QuerySet[Example], owner, verdict: str) -> list[OverturnRow]:
    """What overturning ``examples`` to ``verdict`` (one of ``Validation.Verdict``) by ``owner`` would do,
    one ``OverturnRow`` each, by id; nothing is written (the confirmation page's GET)."""
    rows = []
    for example in examples.select_related("round__task").order_by("pk"):
        if not example.round.task.is_owner(owner):
            refusal = NOT_OWNER_TO_OVERTURN
        else:
            refused = overturn_refusal(example, verdict)
            refusal = refused[1] if refused else None
        rows.append(OverturnRow(example, example.status, STATUS_OF_VERDICT[verdict], refusal))
    return rows


def validations_of(example: Example) -> QuerySet[Validation]:
    """An example's validations with their validators, oldest first (for its task's owners)."""
    return example.validations.select_related("validator").order_by("created_at", "id")


# ---------------------------------------------------------------------------------------------------
# Per-annotator statistics


@dataclass(frozen=True)
class AnnotatorRoundStats:
    """One person's work in one round (docs/domain.md, "Statistics").

    ``submitted``: examples they wrote there (not retracted, not imported); ``fooling``: of those,
    model-fooling; ``verified_fooling``: model-fooling and settled ``validated_correct``;
    ``validations``: verdicts they gave on the round's examples, gold answers served in the round
    included (``validation.gold``); ``judged_settled``: of their
    non-owner verdicts, those on examples now settled; ``agreeing``: of those, the ones whose verdict
    matches the settled status. Owner verdicts are left out of agreement (they settle the example, so
    they agree by construction).
    """

    user_id: int
    round_number: int
    submitted: int = 0
    fooling: int = 0
    verified_fooling: int = 0
    validations: int = 0
    judged_settled: int = 0
    agreeing: int = 0

    @property
    def agreement(self) -> float | None:
        """Fraction of their verdicts on settled examples that match the settled status; None if none."""
        return self.agreeing / self.judged_settled if self.judged_settled else None


def annotator_round_stats(task: Task, *, user=None) -> list[AnnotatorRoundStats]:
    """Per (person, round) statistics of ``task``, sorted by user id then round number (three queries).

    Args:
        user: only this person's rows when given.

    Returns:
        One row per (person, round) where that person wrote or validated anything.
    """
    written = annotation_selectors.collected_examples().filter(round__task=task, annotator__isnull=False)
    judged = Validation.objects.filter(example__round__task=task)
    if user is not None:
        written = written.filter(annotator=user)
        judged = judged.filter(validator=user)
    fooling = Q(model_wrong=True)
    rows: dict[tuple[int, int], dict] = {}
    for r in (
        written.values("annotator_id", "round__number")
        .order_by()
        .annotate(
            submitted=Count("pk"),
            fooling=Count("pk", filter=fooling),
            verified_fooling=Count("pk", filter=fooling & Q(status=Example.Status.VALIDATED_CORRECT)),
        )
    ):
        key = (r.pop("annotator_id"), r.pop("round__number"))
        rows.setdefault(key, {}).update(r)
    voter = Q(is_owner_verdict=False)
    settled = ~Q(example__status=Example.Status.PENDING)
    for r in (
        judged.values("validator_id", "example__round__number")
        .order_by()
        .annotate(
            validations=Count("pk"),
            judged_settled=Count("pk", filter=voter & settled),
            agreeing=Count("pk", filter=voter & settled & _AGREES),
        )
    ):
        key = (r.pop("validator_id"), r.pop("example__round__number"))
        rows.setdefault(key, {}).update(r)
    # Gold answers count as verdicts given in the round they were served in, so a person's own figures do
    # not tell them which of their verdicts were on gold items (validation.gold).
    gold = GoldAnswer.objects.filter(gold__task=task, round__isnull=False)
    if user is not None:
        gold = gold.filter(validator=user)
    for r in gold.values("validator_id", "round__number").order_by().annotate(n=Count("pk")):
        row = rows.setdefault((r["validator_id"], r["round__number"]), {})
        row["validations"] = row.get("validations", 0) + r["n"]
    return [AnnotatorRoundStats(user_id=u, round_number=n, **rows[(u, n)]) for u, n in sorted(rows)]


def round_of(task: Task, number: int | str | None) -> Round | None:
    """Round ``number`` of ``task``, or its current round when ``number`` is empty; None if missing or
    not written as ASCII digits (``text_rules.ascii_id``: ``" 4"``, ``"4.0"``, ``"1_0"`` are no round)."""
    if number in (None, ""):
        return task.current_round
    if not isinstance(number, int):
        number = ascii_id(number)
    if number is None:
        return None
    return Round.objects.select_related("task").filter(task=task, number=number).first()
