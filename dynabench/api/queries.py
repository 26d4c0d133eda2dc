"""Query-parameter serializers for the API that are strict: a parameter sent empty is an error.

DRF treats ``?round=`` like a missing parameter and quietly uses the default; for a typed parameter
(an integer, a choice) the API answers 400 instead, so the request means what the client wrote.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

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


@extend_schema_field({"type": "string", "pattern": NO_NUL_PATTERN})
class QueryTextField(serializers.CharField):
    """Text in a query parameter; NUL is refused (DRF's validator) and the schema says so."""
