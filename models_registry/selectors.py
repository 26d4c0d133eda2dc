"""Reads for registered models and round targets."""

from __future__ import annotations

from django.db.models import F, Q, QuerySet

from models_registry.models import RegisteredModel, RoundTarget
from tasks.models import Round, Task


def target_models_for_round(round: Round) -> list[RegisteredModel]:
    """The round's ready target models, in position order (an ensemble when more than one)."""
    targets = (
        RoundTarget.objects.filter(round=round, model__status=RegisteredModel.Status.READY)
        .select_related("model", "model__task")
        .order_by("position", "id")
    )
    return [t.model for t in targets]


def open_round_targets() -> list[RegisteredModel]:
    """The ready target models of every open round (its task's current round, not closed) of an
    active task, each once, ordered by primary key: what annotators' examples are scored by now."""
    open_rounds = Round.objects.filter(is_closed=False, task__is_active=True, task__current_round=F("pk"))
    return list(
        RegisteredModel.objects.filter(
            status=RegisteredModel.Status.READY, round_targets__round__in=open_rounds
        )
        .select_related("task")
        .distinct()
        .order_by("pk")
    )


def ready_models_for_task(task: Task) -> QuerySet[RegisteredModel]:
    """The task's models whose status is ready, by name."""
    return RegisteredModel.objects.filter(task=task, status=RegisteredModel.Status.READY).order_by("name")


def models_visible_to(user, task: Task | None = None) -> QuerySet[RegisteredModel]:
    """Models ``user`` may see (optionally of one ``task``), any status, by task and name.

    Published models of an active task are visible to everyone, anonymous visitors included. An
    unpublished model, or any model of a task made inactive, is visible only to its owner, the owners of
    its task and superusers; to anyone else it is not listed, and views answer 404 for its id
    (``get_object_or_404(models_visible_to(user), pk=...)``), predict included.
    Whether the owner's name is shown is a separate matter (``is_anonymous``).
    """
    qs = RegisteredModel.objects.select_related("task", "owner")
    if task is not None:
        qs = qs.filter(task=task)
    if user is not None and user.is_authenticated and user.is_active and user.is_superuser:
        return qs
    visible = Q(is_published=True, task__is_active=True)
    if user is not None and user.is_authenticated and user.is_active:
        visible |= Q(owner=user) | Q(task__owners=user)
    # task__owners joins a many-to-many table: filter ids in a subquery so no row appears twice.
    return qs.filter(pk__in=RegisteredModel.objects.filter(visible).values("pk"))


def model_visible_to(user, pk) -> RegisteredModel:
    """The model ``pk`` if ``user`` may see it. Raises ``RegisteredModel.DoesNotExist`` otherwise."""
    try:
        pk = int(pk)
    except (TypeError, ValueError):
        raise RegisteredModel.DoesNotExist from None
    return models_visible_to(user).get(pk=pk)


def sees_real_identity(user, model: RegisteredModel, task_owner: bool | None = None) -> bool:
    """Whether ``user`` sees an anonymous model's name and owner (its owner, task owners, superusers).

    ``task_owner``: whether ``user`` owns the model's task, when the caller already knows (saves a query).
    """
    if not model.is_anonymous:
        return True
    if not user.is_authenticated:
        return False
    if model.owner_id == user.pk:
        return True
    return model.task.is_owner(user) if task_owner is None else task_owner


def anonymous_numbers(task: Task) -> dict[int, int]:
    """Model id -> N of "Anonymous model N" for the task's anonymous models (1-based, by id)."""
    ids = (
        RegisteredModel.objects.filter(task=task, is_anonymous=True)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    return {pk: n for n, pk in enumerate(ids, start=1)}


#: Shown instead of a model the viewer may not see (unpublished, or of someone else).
HIDDEN_MODEL = "a model not published"


def display_name(
    user, model: RegisteredModel, numbers: dict[int, int] | None = None, task_owner: bool | None = None
) -> str:
    """The name ``user`` is shown: the model's name, or "Anonymous model N"."""
    if sees_real_identity(user, model, task_owner):
        return model.name
    numbers = anonymous_numbers(model.task) if numbers is None else numbers
    return f"Anonymous model {numbers.get(model.pk, '?')}"


class ModelLabels:
    """Names the models of ``task`` as ``user`` is shown them, when called with a model:
    ``display_name`` for one they may see (``visible``, the ids of ``models_visible_to``),
    ``HIDDEN_MODEL`` for one they may not. Three queries, made once."""

    def __init__(self, user, task: Task):
        self.user = user
        self.visible = set(models_visible_to(user, task).values_list("pk", flat=True))
        self.numbers, self.owns = anonymous_numbers(task), task.is_owner(user)

    def __call__(self, model: RegisteredModel) -> str:
        if model.pk not in self.visible:
            return HIDDEN_MODEL
        return display_name(self.user, model, self.numbers, self.owns)


def card_training_text(model: RegisteredModel, *, with_count: bool = True) -> str:
    """What a model was trained on, in words, from its card: its own ``training_data`` text, else, for
    a target trained here (``card["training"]``), "<task> round(s) 1, 2", its number of training
    examples (with ``with_count``) and the natural data mixed in, which those examples include ("of
    which 928 natural texts of SST-3 sentences (20% of the training set; 25% asked, 928 available);
    source ..., licence ..."); "" when the card says nothing.
    """
    card = model.card or {}
    text = card.get("training_data")
    if isinstance(text, str) and text:
        return text
    training = card.get("training")
    if (
        not isinstance(training, dict)
        or not isinstance(training.get("rounds"), list)
        or not training["rounds"]
    ):
        return ""
    text = f"{model.task.name} round(s) {', '.join(str(r) for r in training['rounds'])}"
    n_train = training.get("n_train")
    if with_count and isinstance(n_train, int) and not isinstance(n_train, bool) and n_train > 0:
        text += f"; {n_train:,} training examples"
    natural = training.get("natural")
    if isinstance(natural, dict) and isinstance(natural.get("n"), int) and natural["n"] > 0:
        # n_train counts the natural texts too: "of which", not "plus".
        text += (
            f", of which {natural['n']:,} natural texts of {natural.get('name') or natural.get('dataset')}"
        )
        share, asked = natural.get("share"), natural.get("share_requested")
        if isinstance(share, int | float):
            text += f" ({100 * share:.0f}% of the training set"
            if isinstance(asked, int | float) and round(100 * asked) != round(100 * share):
                text += f"; {100 * asked:.0f}% asked, {natural.get('available', natural['n']):,} available"
            text += ")"
        if natural.get("source") or natural.get("licence"):
            text += f"; source {natural.get('source') or '–'}, licence {natural.get('licence') or '–'}"
    return text
