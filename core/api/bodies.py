"""Request bodies that refuse fields they do not know, and integers sent as text, so a client's typo is a
400, not silently dropped or reinterpreted."""

from __future__ import annotations

from collections.abc import Mapping

from django.http import QueryDict
from rest_framework import serializers

from core.text_rules import ascii_id


class RejectUnknownFieldsMixin:
    """For a ``Serializer`` of a JSON object body: a key that is not one of its fields is a 400 with the
    message ``Unknown field; this takes: a, b, c.`` under that key, reported together with the fields'
    own errors, so that a client fixes its body once, not once per kind of mistake."""

    def unknown_field_message(self) -> str:
        """The message under each unknown key; a serializer may name its fields otherwise."""
        return f"Unknown field; this takes: {', '.join(self.fields)}."

    def to_internal_value(self, data):
        """``data`` validated as usual; raises ``ValidationError`` with the unknown keys' messages beside
        the fields' (``validate`` runs only when there are neither)."""
        unknown = sorted(set(data) - set(self.fields)) if isinstance(data, Mapping) else []
        refused = {str(name): [self.unknown_field_message()] for name in unknown}
        try:
            value = super().to_internal_value(data)
        except serializers.ValidationError as exc:
            if refused and isinstance(exc.detail, Mapping):
                raise serializers.ValidationError({**exc.detail, **refused}) from None
            raise
        if refused:
            raise serializers.ValidationError(refused)
        return value


def _json_kind(value) -> str:
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, float):
        return "a decimal number"
    if isinstance(value, int):
        return "a number"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return "null" if value is None else type(value).__name__


class StrictBooleanField(serializers.BooleanField):
    """A flag of a JSON body, taken only as JSON ``true`` or ``false``: ``"true"``, ``1`` and ``"yes"``
    are a 400 with ``Must be JSON true or false, not a string.`` (DRF's ``BooleanField`` reads them as
    true, so a client sending ``"false"`` by mistake could not tell from the answer what it asked for).

    A form-encoded body (a ``QueryDict``) may send ``true`` or ``false`` as text.
    """

    default_error_messages = {
        "not_json_boolean": "Must be JSON true or false, not {kind}.",
        "not_true_false": "Must be true or false.",
    }

    def to_internal_value(self, data):
        """``data`` as a ``bool``; raises ``ValidationError`` (above) for anything else."""
        if isinstance(getattr(self.root, "initial_data", None), QueryDict):
            if data not in ("true", "false"):
                self.fail("not_true_false")
            return data == "true"
        if not isinstance(data, bool):
            self.fail("not_json_boolean", kind=_json_kind(data))
        return data


class StrictIntegerField(serializers.IntegerField):
    """An integer of a JSON body, taken only as a JSON integer: ``"881"`` (a string), ``881.0`` and
    ``true`` are a 400 with ``Must be a JSON integer (e.g. 12), not a string.`` rather than read as 881
    (DRF's ``IntegerField`` turns ``"881"``, ``"881.0"`` and ``true`` into numbers).

    A form-encoded body (a ``QueryDict``, where every value is text) may send the integer as 1 to 10
    ASCII digits; ``min_value`` / ``max_value`` apply as usual.
    """

    default_error_messages = {
        "not_json_integer": "Must be a JSON integer (e.g. 12), not {kind}.",
        "not_digits": "Must be a whole number written with the digits 0-9.",
    }

    def to_internal_value(self, data):
        """``data`` as an ``int``; raises ``ValidationError`` (above) for anything else."""
        if isinstance(getattr(self.root, "initial_data", None), QueryDict):
            number = ascii_id(data, max_digits=10)
            if number is None:
                self.fail("not_digits")
            data = number
        elif isinstance(data, bool) or not isinstance(data, int):
            self.fail("not_json_integer", kind=_json_kind(data))
        return super().to_internal_value(data)
