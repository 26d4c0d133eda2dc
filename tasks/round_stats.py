"""Round statistics: examples collected, model-fooling, verified, MER and vMER per round.

Examples are the annotation app's table, which sits above this one. These reads reach it through the
round's reverse relation (``Round.examples``) and its model class (``examples_model()``), never by an
import, so the task page, the round API and the round admin, which live here, can show the figures.
The crowd cost reads the crowd app's pay ledger the same way (``Round.ledger_entries``).
Definitions: docs/domain.md, "MER and vMER" and "Statistics"; docs/crowd.md, "Cost per round".
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal
from functools import cache

from django.db.models import Count, Q, QuerySet, Sum

from core.metrics import krippendorff_alpha_nominal

from .models import Round, Task


@cache
def examples_model():
    """annotation's ``Example`` model, read off the reverse relation ``Round.examples``."""
    return Round._meta.get_field("examples").related_model


def not_collected_sources() -> tuple[str, str]:
    """The ``Example.source`` values of examples that are not collected in their round, read off the
    model: imported ones (counted apart) and rating examples (a replayed model's answers that people
    judge, ``generative_bench.replay``: in no figure of a round)."""
    Example = examples_model()
    return (Example.Source.IMPORTED, Example.Source.RATING)


def _filters() -> dict[str, Q]:
    """The count filters over ``Round.examples``, built on first use (the app registry must be ready)."""
    Example = examples_model()

    # Retracted examples count in neither numerator nor denominator of MER.
    # Imported examples were written against another platform's models: no target of ours answered them
    # live, so they are counted apart and stay out of MER and vMER. Rating examples (a replayed model's
    # answers that people judge, generative_bench.replay) were written by no one: in no count of a round.
    written_here = ~Q(examples__source__in=not_collected_sources())
    live = Q(examples__is_retracted=False) & written_here
    # Scored: the model verdict is known (model_wrong true or false). model_wrong is None while the
    # target failed (prediction_status failed), when the round has no target (none), or under ask_user
    # until the author answers; those examples are unscored and stay out of MER and vMER.
    scored = live & Q(examples__model_wrong__isnull=False)
    unscored = live & Q(examples__model_wrong__isnull=True)
    fooling = live & Q(examples__model_wrong=True)
    verified_fooling = fooling & Q(examples__status=Example.Status.VALIDATED_CORRECT)
    imported = Q(examples__is_retracted=False, examples__source=Example.Source.IMPORTED)
    retracted = Q(examples__is_retracted=True) & written_here
    # "Flagged": a collected example that validators settled as flagged OR that its author flagged.
    flagged = live & (Q(examples__status=Example.Status.FLAGGED) | Q(examples__is_flagged_by_annotator=True))
    return {
        "n_collected": live,
        "n_scored": scored,
        "n_fooling": fooling,
        "n_verified": verified_fooling,
        "n_unscored": unscored,
        "n_imported": imported,
        "n_retracted": retracted,
        "n_flagged": flagged,
    }


def rate(part: int, scored: int) -> float | None:
    """MER or vMER from counts: ``part / scored``, a fraction in [0, 1]; None ("not measured") when
    ``scored`` is 0 (docs/domain.md, "MER and vMER").

    Args:
        part: model-fooling examples (MER) or verified model-fooling examples (vMER) among the scored.
        scored: collected examples whose model verdict is known (``model_wrong`` not None).
    """
    return part / scored if scored else None


@dataclass(frozen=True)
class RoundCost:
    """What a round's crowd work cost in one ``currency`` (docs/crowd.md, "Cost per round"): ``total``, the
    sum of every pay ledger row of the round (reversals included, paid or not), and ``total`` divided by
    the collected examples, by the collected examples that are settled (any status), and by the verified
    model-fooling ones; each ``Decimal`` (unrounded), None when its count is 0."""

    currency: str
    total: Decimal
    per_collected: Decimal | None
    per_validated: Decimal | None
    per_verified_fooling: Decimal | None


def _per(total: Decimal, count: int) -> Decimal | None:
    return total / count if count else None


def _costs(rounds) -> dict[int, tuple[RoundCost, ...]]:
    """Each round's cost per currency, from the crowd app's ledger through the reverse relation
    ``Round.ledger_entries`` (crowd sits above this app), and the settled count for rounds that have
    ledger rows: two queries. ``rounds`` are annotated by ``with_round_counts``."""
    by_pk = {r.pk: r for r in rounds}
    totals = (
        Round.objects.filter(pk__in=by_pk, ledger_entries__isnull=False)
        .values_list("pk", "ledger_entries__currency")
        .annotate(total=Sum("ledger_entries__amount"))
        .order_by("pk", "ledger_entries__currency")
    )
    rows = list(totals)
    if not rows:
        return {pk: () for pk in by_pk}
    Example = examples_model()
    settled = dict(
        Example.objects.filter(round_id__in={pk for pk, _, _ in rows}, is_retracted=False)
        .exclude(source__in=not_collected_sources())
        .exclude(status=Example.Status.PENDING)
        .values_list("round_id")
        .annotate(n=Count("pk"))
        .order_by()
    )
    costs: dict[int, list[RoundCost]] = {pk: [] for pk in by_pk}
    for pk, currency, total in rows:
        r = by_pk[pk]
        costs[pk].append(
            RoundCost(
                currency=currency,
                total=total,
                per_collected=_per(total, r.n_collected),
                per_validated=_per(total, settled.get(pk, 0)),
                per_verified_fooling=_per(total, r.n_verified),
            )
        )
    return {pk: tuple(c) for pk, c in costs.items()}


@dataclass(frozen=True)
class RoundCounts:
    """Statistics of one round (docs/domain.md, "MER and vMER").

    ``collected`` counts examples written on the platform and not retracted; ``scored`` those of them
    whose model verdict is known (``model_wrong`` true or false); ``unscored`` the rest
    (``collected = scored + unscored``): awaiting a model verdict because their target failed (until
    ``retry_predictions``), the round has no target, or an ``ask_user`` author has not answered yet;
    ``fooling`` those with ``model_wrong`` true; ``verified`` the model-fooling ones settled
    ``validated_correct``; ``imported`` examples from datasets (apart from everything else);
    ``retracted`` examples written here and withdrawn by their author; ``flagged`` collected examples
    settled ``flagged`` by validation or flagged by their author (one count per example, even when
    both); ``median_time_ms`` the median ``time_taken_ms`` of the collected examples that have one
    (None when none has); ``agreement`` Krippendorff's alpha (nominal) over the validators' ordinary
    verdicts on the collected examples (owner verdicts left out: they settle, they do not code), None
    when it is undefined (``core.metrics.krippendorff_alpha_nominal``); ``costs`` the crowd pay of
    the round, one ``RoundCost`` per currency (empty when nothing was paid through a study).
    """

    round: Round
    collected: int
    scored: int
    fooling: int
    unscored: int
    imported: int = 0
    verified: int = 0
    retracted: int = 0
    flagged: int = 0
    median_time_ms: float | None = None
    agreement: float | None = None
    costs: tuple[RoundCost, ...] = ()

    @property
    def cost(self) -> RoundCost | None:
        """The round's crowd cost when it was paid in one currency; None with no ledger rows or with
        several currencies (then see ``costs``, one per currency)."""
        return self.costs[0] if len(self.costs) == 1 else None

    @property
    def mer(self) -> float | None:
        """Model error rate in [0, 1]: model-fooling / scored (unscored and retracted examples in
        neither); None ("not measured") when no collected example is scored."""
        return rate(self.fooling, self.scored)

    @property
    def vmer(self) -> float | None:
        """Validated MER in [0, 1]: verified model-fooling / scored, over the same examples as MER (so
        vMER <= MER); None ("not measured") when no collected example is scored."""
        return rate(self.verified, self.scored)

    @property
    def median_time_s(self) -> float | None:
        """The median time per example in seconds (None when unknown)."""
        return None if self.median_time_ms is None else self.median_time_ms / 1000


def with_round_counts(rounds: QuerySet[Round]) -> QuerySet[Round]:
    """Annotate rounds with their counts in one query.

    Adds ``n_collected``, ``n_scored``, ``n_fooling``, ``n_verified``, ``n_unscored``, ``n_imported``,
    ``n_retracted`` and ``n_flagged``, integers (meanings as in ``RoundCounts``; MER and vMER from them
    with ``rate``).
    """
    return rounds.annotate(**{name: Count("examples", filter=f) for name, f in _filters().items()})


def median(values: list[float] | list[int]) -> float | None:
    """The median of ``values`` (mean of the two middle values for an even count); None when empty."""
    ordered = sorted(values)
    n = len(ordered)
    if not n:
        return None
    middle = n // 2
    return float(ordered[middle]) if n % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def _median_times(round_ids: list[int]) -> dict[int, float | None]:
    """Median ``time_taken_ms`` of each round's collected examples, in one query for all the rounds.

    Computed in Python so it gives the same answer on PostgreSQL and SQLite (the demo); it reads one
    integer per collected example.
    """
    Example = examples_model()
    times: dict[int, list[int]] = {pk: [] for pk in round_ids}
    rows = (
        Example.objects.filter(round_id__in=round_ids, is_retracted=False, time_taken_ms__isnull=False)
        .exclude(source__in=not_collected_sources())
        .values_list("round_id", "time_taken_ms")
    )
    for round_id, ms in rows.iterator(chunk_size=5000):
        times[round_id].append(ms)
    return {pk: median(values) for pk, values in times.items()}


def _agreements(round_ids: list[int]) -> dict[int, float | None]:
    """Krippendorff's alpha (nominal) of each round's ordinary verdicts on its collected examples, from
    one query over ``Example.validations`` (the reverse relation: validation sits above this app)."""
    Example = examples_model()
    verdicts: dict[int, dict[int, list[str]]] = {pk: defaultdict(list) for pk in round_ids}
    rows = (
        Example.objects.filter(
            round_id__in=round_ids, is_retracted=False, validations__is_owner_verdict=False
        )
        .exclude(source__in=not_collected_sources())
        .values_list("round_id", "pk", "validations__verdict")
    )
    for round_id, example_id, verdict in rows.iterator(chunk_size=5000):
        verdicts[round_id][example_id].append(verdict)
    return {pk: krippendorff_alpha_nominal(units.values()) for pk, units in verdicts.items()}


def _counts(
    r: Round, median_time_ms: float | None, agreement: float | None = None, costs: tuple[RoundCost, ...] = ()
) -> RoundCounts:
    return RoundCounts(
        round=r,
        collected=r.n_collected,
        scored=r.n_scored,
        fooling=r.n_fooling,
        unscored=r.n_unscored,
        imported=r.n_imported,
        verified=r.n_verified,
        retracted=r.n_retracted,
        flagged=r.n_flagged,
        median_time_ms=median_time_ms,
        agreement=agreement,
        costs=costs,
    )


def round_counts_for_task(task: Task) -> list[RoundCounts]:
    """Per-round statistics of a task, lowest round first.

    Four or five queries whatever the number of rounds: the counts, the times for the medians, the
    verdicts for the agreement, the ledger totals (and settled counts) for the cost.
    """
    rounds = list(with_round_counts(Round.objects.filter(task=task).order_by("number")))
    ids = [r.pk for r in rounds]
    medians, agreements, costs = _median_times(ids), _agreements(ids), _costs(rounds)
    return [_counts(r, medians[r.pk], agreements[r.pk], costs[r.pk]) for r in rounds]


def round_counts(round_: Round) -> RoundCounts:
    """Statistics of one round: counts, MER, vMER, median time and agreement (see ``RoundCounts``)."""
    r = with_round_counts(Round.objects.filter(pk=round_.pk)).get()
    return _counts(r, _median_times([r.pk])[r.pk], _agreements([r.pk])[r.pk], _costs([r])[r.pk])
