"""Filters shared by the API's filter sets (django-filter)."""

from __future__ import annotations

import django_filters
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field

# Booleans are exactly ``true`` or ``false``: anything else is a 400, not silently "no filter"
# (django-filter's BooleanFilter ignores values it does not know).
BOOLEAN_CHOICES = [("true", "true"), ("false", "false")]


def _as_bool(value: str) -> bool:
    return value == "true"


def strict_boolean_filter(**kwargs) -> django_filters.TypedChoiceFilter:
    """A filter taking ``true`` or ``false`` (a Python bool for the queryset or ``method``), documented
    as a boolean in the OpenAPI schema; any other value is a 400 with the parameter's name."""
    return extend_schema_field(OpenApiTypes.BOOL)(
        django_filters.TypedChoiceFilter(choices=BOOLEAN_CHOICES, coerce=_as_bool, **kwargs)
    )
