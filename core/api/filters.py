"""Filters shared by the API's filter sets (django-filter)."""

from __future__ import annotations

import django_filters
from django import forms
from django.forms.utils import ErrorDict, ErrorList
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field

from core.text_rules import ascii_id, repeated_parameter_message, repeated_parameters

#: The largest value of an integer parameter (PostgreSQL ``integer``).
MAX_INT = 2**31 - 1

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


class _AsciiIntegerField(forms.CharField):
    """1 to 10 ASCII digits, a value from 1 to ``MAX_INT``; anything else is a field error (a space too:
    the value is not stripped)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("strip", False)
        super().__init__(*args, **kwargs)

    def to_python(self, value):
        value = super().to_python(value)
        if value in self.empty_values:
            return None
        number = ascii_id(value, max_digits=10)
        if number is None or not 1 <= number <= MAX_INT:
            raise forms.ValidationError(f"A whole number from 1 to {MAX_INT}, written with the digits 0-9.")
        return number


class _AsciiIntegerFilter(django_filters.Filter):
    field_class = _AsciiIntegerField


def strict_integer_filter(**kwargs) -> django_filters.Filter:
    """A filter taking a positive whole number in ASCII digits (``?round=2``); ``abc``, ``1.5``, ``²``,
    ``١`` or thousands of digits are a 400 with the parameter's name (django-filter's ``NumberFilter``
    reads ``1.0`` and Unicode digits as numbers)."""
    return extend_schema_field({"type": "integer", "minimum": 1, "maximum": MAX_INT})(
        _AsciiIntegerFilter(**kwargs)
    )


class StrictFilterSet(django_filters.FilterSet):
    """A filter set that refuses query parameters it does not know (``?numbr=2``, or ``?number=abc`` on a
    list without a ``number`` filter) with ``Unknown parameter; this list takes: ...`` under the
    parameter's name, rather than ignoring them and answering the whole list. Pagination
    (``page``, ``page_size``) and ``format`` are known to every list.

    A parameter given twice (``?runtime=bogus&runtime=torch``) is refused too, instead of the last value
    silently winning; and a value outside a choice filter's choices gets a message that lists them.
    """

    COMMON_PARAMETERS = ("page", "page_size", "format")

    def is_valid(self) -> bool:
        """The form's validity, and no unknown or repeated parameter."""
        return super().is_valid() and not self._unknown() and not self._repeated()

    @property
    def errors(self):
        """The form's errors plus one per unknown or repeated parameter (a ``django.forms.utils.ErrorDict``)."""
        errors = ErrorDict(self.form.errors)
        for name in list(errors):
            choices = self._choices_of(name)
            if choices:
                # One message that lists the choices, instead of Django's "Select a valid choice. x is not
                # one of the available choices." beside a second one that lists them.
                given = str(self.data.get(name, ""))[:100]
                errors[name] = ErrorList(
                    [f"{given!r} is not a choice here; choose one of: {', '.join(choices)}."]
                )
        known = ", ".join([*self.filters, *self.COMMON_PARAMETERS])
        unknown = set(self._unknown())
        for name in sorted(unknown):
            errors[name] = ErrorList([f"Unknown parameter; this list takes: {known}."])
        for name, count in self._repeated().items():
            if name not in unknown:  # an unknown one is refused as unknown: giving it once would not help
                errors[name] = ErrorList([repeated_parameter_message(count)])
        return errors

    def _choices_of(self, name: str) -> list[str]:
        field = self.form.fields.get(name)
        choices = getattr(field, "choices", None) if field is not None else None
        return [str(value) for value, _label in choices or () if value not in ("", None)]

    def _unknown(self) -> list[str]:
        if not self.is_bound:
            return []
        allowed = {*self.filters, *self.COMMON_PARAMETERS}
        return sorted(name for name in self.data if name not in allowed)

    def _repeated(self) -> dict[str, int]:
        return repeated_parameters(self.data) if self.is_bound else {}
