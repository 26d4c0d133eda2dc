"""django-filter filters of ``GET /api/datasets/``: by task, access, kind and round."""

from __future__ import annotations

import django_filters

from core.api.filters import StrictFilterSet, strict_integer_filter

from .models import Dataset


class DatasetFilter(StrictFilterSet):
    """``?task=<slug>&access=scoring&kind=static&round=2`` (all optional; combined with AND)."""

    task = django_filters.CharFilter(field_name="task__slug", help_text="Task slug.")
    access = django_filters.ChoiceFilter(choices=Dataset.Access.choices)
    kind = django_filters.ChoiceFilter(choices=Dataset.Kind.choices)
    round = strict_integer_filter(field_name="round__number", help_text="Round number.")

    class Meta:
        model = Dataset
        fields = ["task", "access", "kind", "round"]
