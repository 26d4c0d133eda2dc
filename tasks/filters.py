"""django-filter filter sets of the tasks API."""

from __future__ import annotations

from core.api.filters import StrictFilterSet, strict_boolean_filter, strict_integer_filter

from .models import Round, Task


class RoundFilter(StrictFilterSet):
    """``?number=N&is_closed=true|false`` on a task's rounds; an unknown parameter or a bad value is a 400."""

    number = strict_integer_filter(help_text="Round number.")
    is_closed = strict_boolean_filter()

    class Meta:
        model = Round
        fields = ["number", "is_closed"]


class TaskFilter(StrictFilterSet):
    """No filters: the task list takes only ``page``, ``page_size`` and ``format``; anything else
    (``?slug=nli``) is a 400 naming it instead of the whole list answered as if filtered."""

    class Meta:
        model = Task
        fields: list[str] = []
