"""Reads of examples and predictions: visibility, target models. Round counts (MER, vMER) are read by
``tasks.round_stats`` over the reverse relation, so the task pages below this app can show them."""

from __future__ import annotations

from django.db.models import Count, Prefetch, Q, QuerySet

from core.text_rules import ascii_id
from models_registry import selectors as registry_selectors
from models_registry.models import RegisteredModel
from tasks.models import Context, Round, Task

from .models import Example, Prediction


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


def with_predictions(qs: QuerySet[Example]) -> QuerySet[Example]:
    """``qs`` with what an example's page or API body reads joined or prefetched: its round and task,
    its context, and its predictions with their models in creation order."""
    predictions = Prediction.objects.select_related("model").order_by("id")
    return qs.select_related("round__task", "context").prefetch_related(
        Prefetch("predictions", queryset=predictions)
    )


def validations_in_order() -> QuerySet:
    """Every validation, oldest first (``created_at``, then id): the validation app's table, read through
    the reverse relation ``Example.validations`` (docs/architecture.md, "Reaching up without an import")."""
    return Example._meta.get_field("validations").related_model.objects.order_by("created_at", "id")


def with_history(qs: QuerySet[Example]) -> QuerySet[Example]:
    """``with_predictions(qs)`` with each example's validations prefetched oldest first: what the
    example's page and its API body show of its history (docs/domain.md, "Example history")."""
    return with_predictions(qs).prefetch_related(Prefetch("validations", queryset=validations_in_order()))


def example_with_predictions(pk: int) -> Example:
    """Example ``pk`` through ``with_predictions``. Raises ``Example.DoesNotExist``."""
    return with_predictions(Example.objects.filter(pk=pk)).get()


def predictions_of(example: Example):
    """An example's predictions with their models, in creation order."""
    return example.predictions.select_related("model").order_by("id")


def examples_with_failed_predictions() -> QuerySet[Example]:
    """Examples whose prediction failed and that still wait to be scored, oldest first."""
    return Example.objects.filter(prediction_status=Example.PredictionStatus.FAILED).order_by("id")


def collected_examples() -> QuerySet[Example]:
    """Examples written on the platform and not retracted: those MER counts, validators are served and
    annotators are ranked on (imported examples are counted apart; ``tasks.round_stats``). Rating
    examples (a replayed model's answers for people to judge, ``generative_bench.replay``) are no
    collected data: they are served to validators (``validatable_examples``), never counted here."""
    return Example.objects.filter(is_retracted=False).exclude(
        source__in=[Example.Source.IMPORTED, Example.Source.RATING]
    )


def validatable_examples() -> QuerySet[Example]:
    """Examples validators may be served, not retracted: the collected examples and the rating examples
    (a generative model's replayed answers for people to judge by the rubric, docs/benchmarking.md,
    "Rating replayed answers": no author, ``model_wrong`` None)."""
    return Example.objects.filter(is_retracted=False).exclude(source=Example.Source.IMPORTED)


def examples_of_task(task: Task) -> QuerySet[Example]:
    """Every example of ``task`` (the verdict views look the posted example up here; others are 404)."""
    return Example.objects.filter(round__task=task).select_related("round__task")


def examples_of_active_tasks() -> QuerySet[Example]:
    """Every example of an active task (the API's verdict endpoint looks the example up here)."""
    return Example.objects.filter(round__task__is_active=True).select_related("round__task")


def session_tally(user, round_: Round, example_ids, goal: Q | None = None) -> tuple[int, int]:
    """``(met, written)``: of ``example_ids`` (the examples written through the create page in this
    browser session), ``user``'s own in ``round_`` that are not retracted, and of those the ones that met
    the round's ``goal`` (an ``annotation.goal.goal_met_q``; default: fooled the model, ``model_wrong``
    true). Undecided ones count as written, not met. One aggregate query; none for no ids."""
    ids = list(example_ids)
    if not ids:
        return 0, 0
    counts = (
        collected_examples()
        .filter(annotator=user, round=round_, pk__in=ids)
        .aggregate(
            written=Count("pk"), fooled=Count("pk", filter=Q(model_wrong=True) if goal is None else goal)
        )
    )
    return counts["fooled"], counts["written"]


def own_example_of_task(user, task: Task, pk) -> Example | None:
    """``user``'s own example ``pk`` of ``task`` (the create page's "Try a variation"), or None for
    someone else's, another task's, an unknown id or a malformed one."""
    pk = ascii_id(pk)
    if pk is None:
        return None
    return own_examples(user).filter(round__task=task, pk=pk).select_related("context").first()


def context_of_task(task: Task, pk) -> Context | None:
    """The context ``pk`` of ``task``, in any of its rounds (the create page names the one a refused
    form was written for), or None for another task's, an unknown id or a malformed one. ``pk``: an int
    or its digits as text."""
    pk = None if pk is None else ascii_id(str(pk))
    if pk is None:
        return None
    return Context.objects.filter(task=task, pk=pk).first()


def tutorial_items_of(task: Task) -> QuerySet:
    """The task's worked examples (``tasks.TutorialItem``) in tutorial order, for the create page's
    instructions."""
    return task.tutorial_items.order_by("position", "id")
