"""Form fields shared by the server-rendered forms of every app."""

from __future__ import annotations

import json

from django import forms

from core.text_rules import ascii_id, lone_surrogate_path


class AsciiIdField(forms.CharField):
    """A positive id (a hidden example id, say) as 1 to 9 ASCII digits (``text_rules.ascii_id``).

    Django's ``IntegerField`` strips spaces and lets ``int()`` read ``"1_0"`` as 10 and Arabic-Indic
    digits as ASCII ones; here each of those is "Enter a whole number.", as is 0.
    """

    default_error_messages = {"invalid": "Enter a whole number."}

    def __init__(self, **kwargs):
        kwargs.setdefault("strip", False)
        super().__init__(**kwargs)

    def to_python(self, value):
        value = super().to_python(value)
        if value in self.empty_values:
            return None
        number = ascii_id(value)
        if not number:
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid")
        return number


class JSONTextField(forms.JSONField):
    """Django's JSON form field (the admin's for every ``JSONField``), refusing lone surrogates.

    JSON may spell a lone surrogate (``"\\ud800"``); Python decodes it into a ``str`` that cannot be
    encoded as UTF-8. Saved, it breaks every later page that shows it; refused by a plain field, the form
    shown again with the decoded value breaks the same way. Here it is a form error naming where it is,
    the text is shown again as typed, and a value already stored with one (SQLite allows it) is shown with
    ``\\u`` escapes instead of failing the page.
    """

    default_error_messages = {
        "lone_surrogate": (
            "%(where)s holds a lone surrogate (a \\uD800-\\uDFFF escape that is not half of a pair), which "
            "is not text; nothing was saved."
        )
    }

    def to_python(self, value):
        converted = super().to_python(value)
        where = lone_surrogate_path(converted)
        if where is not None:
            where = "The value" if where == "the body" else f"{where[:80]!r}"
            raise forms.ValidationError(
                self.error_messages["lone_surrogate"], code="lone_surrogate", params={"where": where}
            )
        return converted

    def bound_data(self, data, initial):
        value = super().bound_data(data, initial)
        if not isinstance(value, forms.fields.InvalidJSONInput) and lone_surrogate_path(value) is not None:
            return forms.fields.InvalidJSONInput(data)  # shown again as typed
        return value

    def prepare_value(self, value):
        if isinstance(value, forms.fields.InvalidJSONInput):
            return value
        if lone_surrogate_path(value) is not None:
            return json.dumps(value, ensure_ascii=True, cls=self.encoder)
        return super().prepare_value(value)
