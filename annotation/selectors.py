"""Reads of examples and predictions: visibility, round counts and MER, target models."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Q, QuerySet

from models_registry import selectors as registry_selectors
from models_registry.models import RegisteredModel
from tasks.models import Round, Task

from .models import Example

# Retracted examples count in neither numerator nor denominator of MER (DOMAIN.md, "MER").
# Imported examples were written against another platform's models: no target of ours answered them
# live, so they are counted apart and stay out of MER.
_LIVE = Q(examples__is_retracted=False) & ~Q(examples__source=Example.Source.IMPORTED)
_COLLECTED = _LIVE
_FOOLING = _LIVE & Q(examples__model_wrong=True)
_UNSCORED = _LIVE & Q(examples__prediction_status=Example.PredictionStatus.FAILED)
_IMPORTED = Q(examples__is_retracted=False, examples__source=Example.Source.IMPORTED)


@dataclass(frozen=True)
class RoundCounts:
    """Examples collected in a round, how many fooled the model, and the model error rate.

    ``collected`` counts examples written on the platform (not retracted); ``unscored`` those whose
    target model failed and that wait for ``retry_predictions``; ``imported`` examples from datasets.
    """

    round: Round
    collected: int
    fooling: int
    unscored: int
    imported: int = 0

    @property
    def mer(self) -> float | None:
        """Model error rate: model-fooling / collected (retracted excluded); None when nothing collected."""
        return self.fooling / self.collected if self.collected else None


def with_round_counts(rounds: QuerySet[Round]) -> QuerySet[Round]:
    """Annotate rounds with ``n_collected``, ``n_fooling``, ``n_unscored`` and ``n_imported`` in one query."""
    return rounds.annotate(
        n_collected=Count("examples", filter=_COLLECTED),
        n_fooling=Count("examples", filter=_FOOLING),
        n_unscored=Count("examples", filter=_UNSCORED),
        n_imported=Count("examples", filter=_IMPORTED),
    )


def round_counts_for_task(task: Task) -> list[RoundCounts]:
    """Per-round counts of a task, lowest round first (one query)."""
    rounds = with_round_counts(Round.objects.filter(task=task).order_by("number"))
    return [RoundCounts(r, r.n_collected, r.n_fooling, r.n_unscored, r.n_imported) for r in rounds]


def round_counts(round_: Round) -> RoundCounts:
    """Counts of one round: collected, model-fooling, not yet scored, and MER."""
    r = with_round_counts(Round.objects.filter(pk=round_.pk)).get()
    return RoundCounts(r, r.n_collected, r.n_fooling, r.n_unscored, r.n_imported)


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
