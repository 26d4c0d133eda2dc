"""The verdict form shared by the validate page and the owner review page."""

from __future__ import annotations

from django import forms

from core.form_fields import AsciiIdField
from tasks.config import TaskConfig

from .models import Validation
from .services import MAX_REASON_LENGTH, VerdictError


class VerdictForm(forms.Form):
    """A verdict on one example: the verdict (one submit button each), an optional corrected label
    (a choice of the task's labels) and reason. The label and verdict rules are the service's."""

    example = AsciiIdField(widget=forms.HiddenInput)
    verdict = forms.ChoiceField(
        choices=Validation.Verdict.choices,
        error_messages={"required": "Choose a verdict.", "invalid_choice": "Choose a verdict."},
    )
    corrected_label = forms.ChoiceField(required=False, label="Corrected label (optional)")
    reason = forms.CharField(
        required=False,
        max_length=MAX_REASON_LENGTH,
        strip=False,
        label="Reason (optional)",
        widget=forms.Textarea(attrs={"dir": "auto", "rows": 2}),
    )

    def __init__(self, cfg: TaskConfig, *args, **kwargs):
        super().__init__(*args, **kwargs)
        labels = cfg.labels
        if labels:
            self.fields["corrected_label"].choices = [("", "—")] + [(label, label) for label in labels]
            self.fields["corrected_label"].help_text = "Only with 'incorrect': the label it should have."
        else:
            del self.fields["corrected_label"]

        if cfg.uncertainty is not None:
            # Uncertainty mode: the validator's own label (or span answer), unanchored; it decides the
            # verdict (services.given_target_verdict). Required by the service, not here: a flag needs none.
            if labels:
                self.fields["given_target"] = forms.ChoiceField(
                    required=False,
                    choices=[(label, label) for label in labels],
                    widget=forms.RadioSelect,
                    label="The label you judge right",
                )
            else:
                self.fields["given_target"] = forms.CharField(
                    required=False,
                    max_length=cfg.max_input_length,
                    strip=False,
                    label="The answer, as it is written in the passage",
                    widget=forms.TextInput(attrs={"dir": "auto", "autocomplete": "off"}),
                )
            self.fields.pop("corrected_label", None)  # the given label is it

    def given_target(self):
        """The validator's own target from a valid form (uncertainty mode): a label, an answer text (the
        service finds it in the passage), or None when the form has none or it was left empty."""
        value = self.cleaned_data.get("given_target")
        return value or None

    def error_text(self) -> str:
        """Every form error as one sentence for a flash message."""
        return " ".join(str(m) for messages in self.errors.values() for m in messages)

    @staticmethod
    def service_error_text(exc: VerdictError) -> str:
        """A ``VerdictError`` as one sentence (field names dropped)."""
        return " ".join(m for messages in exc.errors.values() for m in messages)
