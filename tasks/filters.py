"""django-filter filter sets of the tasks API."""

from __future__ import annotations

import django_filters

from .models import Round


class RoundFilter(django_filters.FilterSet):
    """``?is_closed=true|false`` on a task's rounds."""

    is_closed = django_filters.BooleanFilter()

    class Meta:
        model = Round
        fields = ["is_closed"]
