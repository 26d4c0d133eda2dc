"""django-filter filter set of the examples list (``GET /api/tasks/{slug}/examples/``)."""

from __future__ import annotations

import django_filters
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field

from core.api.filters import StrictFilterSet, strict_boolean_filter, strict_integer_filter

from .models import Example


class ExampleFilter(StrictFilterSet):
    """``?round=N&status=pending|validated_correct|validated_incorrect|flagged&model_wrong=true|false&mine=true``."""

    round = strict_integer_filter(field_name="round__number", help_text="Round number.")
    status = django_filters.ChoiceFilter(choices=Example.Status.choices)
    model_wrong = strict_boolean_filter()
    mine = strict_boolean_filter(method="filter_mine", help_text="true: only the caller's examples.")

    class Meta:
        model = Example
        fields = ["round", "status", "model_wrong", "mine"]

    @extend_schema_field(OpenApiTypes.BOOL)
    def filter_mine(self, queryset, name, value):
        user = getattr(self.request, "user", None)
        if value in (None, "") or user is None or not user.is_authenticated:
            return queryset
        return queryset.filter(annotator=user) if value else queryset.exclude(annotator=user)
