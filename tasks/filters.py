"""django-filter filter sets of the tasks API."""

from __future__ import annotations

import django_filters

from dynabench.api.filters import strict_boolean_filter

from .models import Round


class RoundFilter(django_filters.FilterSet):
    """``?is_closed=true|false`` on a task's rounds."""

    is_closed = strict_boolean_filter()

    class Meta:
        model = Round
        fields = ["is_closed"]
