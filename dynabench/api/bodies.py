"""Request bodies that refuse fields they do not know, so a client's typo is a 400, not silently dropped."""

from __future__ import annotations

from collections.abc import Mapping

from rest_framework import serializers


class RejectUnknownFieldsMixin:
    """For a ``Serializer`` of a JSON object body: a key that is not one of its fields is a 400 with the
    message ``Unknown field; this takes: a, b, c.`` under that key (as the example-create body does)."""

    def to_internal_value(self, data):
        """``data`` validated as usual, after refusing unknown keys; raises ``ValidationError``."""
        if isinstance(data, Mapping):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                known = ", ".join(self.fields)
                raise serializers.ValidationError(
                    {str(name): [f"Unknown field; this takes: {known}."] for name in unknown}
                )
        return super().to_internal_value(data)
