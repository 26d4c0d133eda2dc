"""The profile form of the user's page: the display name shown on annotator leaderboards, if they opt in."""

from __future__ import annotations

from django import forms

from core.text_rules import (
    control_character_message,
    first_control_character,
    has_visible_character,
    no_visible_character_message,
)

from .models import User

DISPLAY_NAME_LABEL = "The display name"
# The prefix of every pseudonym (annotation.exports.PSEUDONYM_PREFIX, an app above this one): a display
# name that starts with it could pass for someone else's pseudonym.
PSEUDONYM_PREFIX = "anon-"


class DisplayNameForm(forms.ModelForm):
    """``display_name`` (at most 60 characters, one line, no control characters or bidi overrides, not
    starting with ``anon-``, which is the pseudonyms' prefix) and ``show_display_name`` (needs a name)."""

    class Meta:
        model = User
        fields = ["display_name", "show_display_name"]
        labels = {
            "display_name": "Display name",
            "show_display_name": "Show my display name on annotator leaderboards (instead of a pseudonym)",
        }
        widgets = {"display_name": forms.TextInput(attrs={"dir": "auto", "maxlength": 60})}

    def clean_display_name(self) -> str:
        name = self.cleaned_data.get("display_name", "")
        if "\n" in name or "\r" in name or "\t" in name:
            raise forms.ValidationError(f"{DISPLAY_NAME_LABEL} must be one line of text.")
        char = first_control_character(name)
        if char is not None:
            raise forms.ValidationError(control_character_message(DISPLAY_NAME_LABEL, char))
        if name and not has_visible_character(name):
            raise forms.ValidationError(no_visible_character_message(DISPLAY_NAME_LABEL))
        if name.lower().startswith(PSEUDONYM_PREFIX):
            raise forms.ValidationError(
                f"{DISPLAY_NAME_LABEL} may not start with “{PSEUDONYM_PREFIX}”: that is how pseudonyms look."
            )
        return name

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("show_display_name") and not cleaned.get("display_name"):
            self.add_error("display_name", "Give a display name to show, or untick the box.")
        return cleaned
