"""Query-parameter serializers for the API that are strict: a parameter sent empty is an error.

DRF treats ``?round=`` like a missing parameter and quietly uses the default; for a typed parameter
(an integer, a choice) the API answers 400 instead, so the request means what the client wrote.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core.text_rules import ascii_id

# "+", not "*": drf-spectacular documents a blank-allowed field as oneOf(this, maxLength 0), and the
# empty string must match exactly one of them.
NO_NUL_PATTERN = "^[^\\u0000]+$"


class StrictQuerySerializer(serializers.Serializer):
    """Refuses a parameter sent empty unless its field allows blank text."""

    def validate(self, attrs):
        errors = {}
        for name, field in self.fields.items():
            if self.initial_data.get(name, None) == "" and not getattr(field, "allow_blank", False):
                errors[name] = ["Give a value or leave the parameter out."]
        if errors:
            raise serializers.ValidationError(errors)
        return attrs


class QueryIntegerField(serializers.IntegerField):
    """A whole number in a query parameter, as 1 to 10 ASCII digits (``text_rules.ascii_id``), then
    ``min_value`` / ``max_value``. DRF's ``IntegerField`` reads ``" 4"``, ``"4.0"``, ``"1_0"`` and
    Arabic-Indic digits as numbers; here they are a 400."""

    default_error_messages = {"not_digits": "A whole number written with the digits 0-9."}

    def to_internal_value(self, data):
        number = ascii_id(data, max_digits=10) if isinstance(data, str) else None
        if number is None:
            self.fail("not_digits")
        return super().to_internal_value(number)


@extend_schema_field({"type": "string", "pattern": NO_NUL_PATTERN})
class QueryTextField(serializers.CharField):
    """Text in a query parameter; NUL is refused (DRF's validator) and the schema says so."""
