"""django-filter filters of ``GET /api/models/``: by task, status, runtime, and the caller's own models."""

from __future__ import annotations

import django_filters

from core.api.filters import StrictFilterSet, strict_boolean_filter
from engine.runtime.runtimes import CHOICES as RUNTIME_CHOICES
from models_registry.models import RegisteredModel


class RegisteredModelFilter(StrictFilterSet):
    """``?task=<slug>&status=ready&runtime=onnx-int8&mine=true`` (all optional; combined with AND)."""

    task = django_filters.CharFilter(field_name="task__slug", help_text="Task slug.")
    status = django_filters.ChoiceFilter(choices=RegisteredModel.Status.choices)
    runtime = django_filters.ChoiceFilter(
        choices=RUNTIME_CHOICES, help_text="The runtime the model is served on (docs/onnx.md)."
    )
    mine = strict_boolean_filter(method="filter_mine", help_text="true: only models you own.")

    class Meta:
        model = RegisteredModel
        fields = ["task", "status", "runtime", "mine"]

    def filter_mine(self, queryset, name, value):
        user = self.request.user if self.request is not None else None
        if value is None:
            return queryset
        if not (user is not None and user.is_authenticated):
            return queryset.none() if value else queryset
        return queryset.filter(owner=user) if value else queryset.exclude(owner=user)
