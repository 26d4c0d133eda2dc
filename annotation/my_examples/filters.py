"""The filters of "My examples" (``/me/examples/``): a GET form over the requester's own examples.

Built on the API's examples filter set (``annotation.filters.ExampleFilter``): its ``status`` filter
and its refusal of unknown parameters are reused; ``task`` is added, ``round`` is a choice of the
round numbers the requester wrote in, and ``model_wrong`` keeps its values (``true`` / ``false``, as
in the API) under readable labels. ``mine`` is left out: every row is the requester's already.
"""

from __future__ import annotations

import django_filters
from django.db.models import Count, Q, QuerySet

from core.api.filters import BOOLEAN_CHOICES
from tasks.models import Task
from tasks.round_stats import rate

from ..filters import ExampleFilter
from ..models import Example

FOOLED_LABELS = {"true": "Fooled the model", "false": "Did not fool it"}


def _own_tasks(request) -> QuerySet[Task]:
    """The tasks the requester has written examples for, by name."""
    if request is None or not request.user.is_authenticated:
        return Task.objects.none()
    return Task.objects.filter(rounds__examples__annotator=request.user).distinct().order_by("name")


class MyExamplesFilter(ExampleFilter):
    """``?task=<slug>&round=N&status=pending|validated_correct|validated_incorrect|flagged&model_wrong=true|false``
    (each optional; an unknown parameter or value is a form error, not ignored)."""

    task = django_filters.ModelChoiceFilter(
        field_name="round__task",
        to_field_name="slug",
        queryset=_own_tasks,
        empty_label="All tasks",
        label="Task",
    )
    round = django_filters.ChoiceFilter(
        field_name="round__number", choices=[], empty_label="All rounds", label="Round"
    )
    model_wrong = django_filters.ChoiceFilter(
        choices=[(value, FOOLED_LABELS[value]) for value, _ in BOOLEAN_CHOICES],
        method="filter_model_wrong",
        empty_label="Either",
        label="Fooled the model",
    )
    mine = None

    class Meta:
        model = Example
        fields = ["task", "round", "status", "model_wrong"]

    def __init__(self, data=None, queryset=None, *, request=None, **kwargs):
        super().__init__(data, queryset, request=request, **kwargs)
        numbers = sorted(set(self.queryset.values_list("round__number", flat=True).order_by()))
        self.filters["round"].extra["choices"] = [(n, f"Round {n}") for n in numbers]
        self.filters["status"].extra["empty_label"] = "Any status"
        self.filters["status"].label = "Status"

    def filter_model_wrong(self, queryset, name, value):
        """``true``: examples that fooled the model; ``false``: those it got right (unscored: neither)."""
        return queryset.filter(model_wrong=value == "true") if value else queryset

    @property
    def is_filtered(self) -> bool:
        """Whether any filter was given a value."""
        return self.is_bound and any(self.data.get(name) for name in self.filters)


def summary(examples: QuerySet[Example]) -> dict:
    """Counts over ``examples`` (one query) for the summary line of "My examples".

    Returns ``{"written", "fooled", "scored", "validated", "retracted", "mer", "mer_text"}``: ``written`` counts the
    examples not retracted; ``fooled`` those of them that fooled the model (``model_wrong`` true);
    ``scored`` those whose model verdict is known; ``validated`` those settled "validated correct";
    ``retracted`` the retracted ones (in no other count); ``mer`` = fooled / scored in [0, 1] as
    ``tasks.round_stats.rate`` defines it (docs/domain.md, "MER and vMER"), None when none is scored; ``mer_text`` it as a whole percentage ("40%", "" when None).
    """
    kept = Q(is_retracted=False)
    counts = examples.order_by().aggregate(
        written=Count("pk", filter=kept),
        fooled=Count("pk", filter=kept & Q(model_wrong=True)),
        scored=Count("pk", filter=kept & Q(model_wrong__isnull=False)),
        validated=Count("pk", filter=kept & Q(status=Example.Status.VALIDATED_CORRECT)),
        retracted=Count("pk", filter=Q(is_retracted=True)),
    )
    counts["mer"] = rate(counts["fooled"], counts["scored"])
    counts["mer_text"] = "" if counts["mer"] is None else f"{counts['mer']:.0%}"
    return counts
