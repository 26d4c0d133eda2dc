"""Form fields shared by the server-rendered forms of every app."""

from __future__ import annotations

from django import forms

from core.text_rules import ascii_id


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
