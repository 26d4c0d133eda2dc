"""Reads of examples and predictions: visibility, round counts and MER, target models."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Q, QuerySet

from models_registry import selectors as registry_selectors
from models_registry.models import RegisteredModel
from tasks.models import Round, Task

from .models import Example

# Retracted examples count in neither numerator nor denominator of MER (docs/domain.md, "MER and vMER").
# Imported examples were written against another platform's models: no target of ours answered them
# live, so they are counted apart and stay out of MER and vMER.
_WRITTEN_HERE = ~Q(examples__source=Example.Source.IMPORTED)
_LIVE = Q(examples__is_retracted=False) & _WRITTEN_HERE
_COLLECTED = _LIVE
_FOOLING = _LIVE & Q(examples__model_wrong=True)
_VERIFIED_FOOLING = _FOOLING & Q(examples__status=Example.Status.VALIDATED_CORRECT)
_UNSCORED = _LIVE & Q(examples__prediction_status=Example.PredictionStatus.FAILED)
_IMPORTED = Q(examples__is_retracted=False, examples__source=Example.Source.IMPORTED)
_RETRACTED = Q(examples__is_retracted=True) & _WRITTEN_HERE
# "Flagged": a collected example that validators settled as flagged OR that its author flagged.
_FLAGGED = _LIVE & (Q(examples__status=Example.Status.FLAGGED) | Q(examples__is_flagged_by_annotator=True))


@dataclass(frozen=True)
class RoundCounts:
    """Statistics of one round (docs/domain.md, "MER and vMER").

    ``collected`` counts examples written on the platform and not retracted; ``fooling`` those with
    ``model_wrong`` true; ``verified`` the model-fooling ones settled ``validated_correct``;
    ``unscored`` those whose target model failed and that wait for ``retry_predictions``;
    ``imported`` examples from datasets (apart from everything else); ``retracted`` examples written
    here and withdrawn by their author; ``flagged`` collected examples settled ``flagged`` by
    validation or flagged by their author (one count per example, even when both);
    ``median_time_ms`` the median ``time_taken_ms`` of the collected examples that have one (None when
    none has).
    """

    round: Round
    collected: int
    fooling: int
    unscored: int
    imported: int = 0
    verified: int = 0
    retracted: int = 0
    flagged: int = 0
    median_time_ms: float | None = None

    @property
    def mer(self) -> float | None:
        """Model error rate: model-fooling / collected (retracted excluded); None when nothing collected."""
        return self.fooling / self.collected if self.collected else None

    @property
    def vmer(self) -> float | None:
        """Validated MER: verified model-fooling / collected; None when nothing collected."""
        return self.verified / self.collected if self.collected else None

    @property
    def median_time_s(self) -> float | None:
        """The median time per example in seconds (None when unknown)."""
        return None if self.median_time_ms is None else self.median_time_ms / 1000


def with_round_counts(rounds: QuerySet[Round]) -> QuerySet[Round]:
    """Annotate rounds with their counts in one query.

    Adds ``n_collected``, ``n_fooling``, ``n_verified``, ``n_unscored``, ``n_imported``, ``n_retracted``
    and ``n_flagged`` (meanings as in ``RoundCounts``).
    """
    return rounds.annotate(
        n_collected=Count("examples", filter=_COLLECTED),
        n_fooling=Count("examples", filter=_FOOLING),
        n_verified=Count("examples", filter=_VERIFIED_FOOLING),
        n_unscored=Count("examples", filter=_UNSCORED),
        n_imported=Count("examples", filter=_IMPORTED),
        n_retracted=Count("examples", filter=_RETRACTED),
        n_flagged=Count("examples", filter=_FLAGGED),
    )


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
    times: dict[int, list[int]] = {pk: [] for pk in round_ids}
    rows = (
        Example.objects.filter(round_id__in=round_ids, is_retracted=False, time_taken_ms__isnull=False)
        .exclude(source=Example.Source.IMPORTED)
        .values_list("round_id", "time_taken_ms")
    )
    for round_id, ms in rows.iterator(chunk_size=5000):
        times[round_id].append(ms)
    return {pk: median(values) for pk, values in times.items()}


def _counts(r: Round, median_time_ms: float | None) -> RoundCounts:
    return RoundCounts(
        round=r,
        collected=r.n_collected,
        fooling=r.n_fooling,
        unscored=r.n_unscored,
        imported=r.n_imported,
        verified=r.n_verified,
        retracted=r.n_retracted,
        flagged=r.n_flagged,
        median_time_ms=median_time_ms,
    )


def round_counts_for_task(task: Task) -> list[RoundCounts]:
    """Per-round statistics of a task, lowest round first.

    Two queries whatever the number of rounds: the counts, and the times for the medians.
    """
    rounds = list(with_round_counts(Round.objects.filter(task=task).order_by("number")))
    medians = _median_times([r.pk for r in rounds])
    return [_counts(r, medians[r.pk]) for r in rounds]


def round_counts(round_: Round) -> RoundCounts:
    """Statistics of one round: counts, MER, vMER and median time (see ``RoundCounts``)."""
    r = with_round_counts(Round.objects.filter(pk=round_.pk)).get()
    return _counts(r, _median_times([r.pk])[r.pk])


def target_models_for_round(round_: Round) -> list[RegisteredModel]:
    """The round's ready target models in ensemble order (``models_registry``'s selector)."""
    return registry_selectors.target_models_for_round(round_)


def examples_visible_to(user) -> QuerySet[Example]:
    """Examples ``user`` may open: their own, and every example of the tasks they own.

    Anonymous users see none; superusers see all. Other people's examples are invisible (views answer
    404), so ids leak nothing.
    """
    qs = Example.objects.select_related("round__task", "context", "annotator")
    if not user.is_authenticated:
        return qs.none()
    if user.is_superuser:
        return qs
    # A subquery, not a join on owners: a join would repeat an example once per owner of its task.
    owned_tasks = Task.objects.filter(owners=user).values("pk")
    return qs.filter(Q(annotator=user) | Q(round__task__in=owned_tasks))


def own_examples(user) -> QuerySet[Example]:
    """Examples written by ``user`` (none for anonymous users)."""
    if not user.is_authenticated:
        return Example.objects.none()
    return Example.objects.filter(annotator=user).select_related("round__task")


def predictions_of(example: Example):
    """An example's predictions with their models, in creation order."""
    return example.predictions.select_related("model").order_by("id")


def examples_with_failed_predictions() -> QuerySet[Example]:
    """Examples whose prediction failed and that still wait to be scored, oldest first."""
    return Example.objects.filter(prediction_status=Example.PredictionStatus.FAILED).order_by("id")
