"""Forms built from the task config: one field per input field, a choice of labels, a client token."""

from __future__ import annotations

import time
import uuid

from django import forms
from django.core import signing

from tasks.config import TaskConfig

from .services import MAX_EXPLANATION_LENGTH, MAX_FLAG_REASON_LENGTH, NON_FIELD, ExampleError, clean_inputs

_START_SALT = "annotation.example-form.started"
# Longer than any real writing session; beyond it "time taken" means the tab was left open.
_MAX_TIME_TAKEN_MS = 24 * 3600 * 1000


def _now_ms() -> int:
    return int(time.time() * 1000)


def signed_start() -> str:
    """A signed timestamp of when the form was rendered, so time taken cannot be made up."""
    return signing.dumps(_now_ms(), salt=_START_SALT)


class ExampleForm(forms.Form):
    """The create form of a task. Input and target checks are the service's (``clean_inputs``).

    Hidden fields: ``client_token`` (a UUID made when the form is rendered; a resubmission with the
    same token is the same example) and ``started`` (signed render time, for time taken).
    """

    client_token = forms.UUIDField(widget=forms.HiddenInput)
    started = forms.CharField(widget=forms.HiddenInput, required=False)

    def __init__(self, cfg: TaskConfig, *args, **kwargs):
        kwargs.setdefault("initial", {})
        kwargs["initial"].setdefault("client_token", uuid.uuid4())
        kwargs["initial"].setdefault("started", signed_start())
        super().__init__(*args, **kwargs)
        self.cfg = cfg
        for spec in cfg.input_fields:
            limit = cfg.max_length_of(spec)
            help_text = spec.get("help", "")
            self.fields[spec["name"]] = forms.CharField(
                label=spec.get("label", spec["name"]),
                required=False,  # empty and whitespace-only are the service's call, with its message
                strip=False,
                help_text=(help_text + " " if help_text else "") + f"At most {limit:,} characters.",
                widget=forms.Textarea(
                    attrs={"dir": "auto", "class": "statement", "placeholder": spec.get("placeholder", "")}
                ),
            )
        target = cfg.target_field
        self.target_name = target["name"]
        self.input_names = [spec["name"] for spec in cfg.input_fields]
        if target["type"] == "multiclass":
            self.fields[target["name"]] = forms.ChoiceField(
                label=target.get("label", target["name"]),
                choices=[(label, label) for label in cfg.labels],
                widget=forms.RadioSelect,
                error_messages={
                    "required": "Choose the label you intend.",
                    "invalid_choice": f"Choose one of: {', '.join(cfg.labels)}.",
                },
            )
        # Field order: inputs, then the target, then the hidden fields.
        self.order_fields([*self.input_names, self.target_name])

    def clean(self):
        data = super().clean()
        if self.target_name not in data:
            return data  # the choice field already reported the problem
        try:
            inputs, target = clean_inputs(
                self.cfg, {n: data.get(n, "") for n in self.input_names}, data[self.target_name]
            )
        except ExampleError as exc:
            self.add_service_errors(exc)
            return data
        data.update(inputs)
        data[self.target_name] = target
        return data

    def add_service_errors(self, exc: ExampleError) -> None:
        """Show a service's ``ExampleError`` on the matching fields (or above the form)."""
        for name, messages in exc.errors.items():
            key = name if name in self.fields else None
            if name == NON_FIELD:
                key = None
            for message in messages:
                self.add_error(key, message)

    @property
    def inputs(self) -> dict:
        """The cleaned input fields by name."""
        return {n: self.cleaned_data[n] for n in self.input_names}

    @property
    def target(self):
        """The cleaned target value."""
        return self.cleaned_data[self.target_name]

    @property
    def time_taken_ms(self) -> int | None:
        """Milliseconds since the form was rendered, or None if the start stamp is missing or forged."""
        try:
            started = signing.loads(self.cleaned_data.get("started") or "", salt=_START_SALT)
        except signing.BadSignature:
            return None
        taken = _now_ms() - int(started)
        return taken if 0 <= taken <= _MAX_TIME_TAKEN_MS else None


class ExplanationForm(forms.Form):
    """The author's explanation of their example."""

    explanation = forms.CharField(
        max_length=MAX_EXPLANATION_LENGTH,
        strip=False,
        required=False,
        widget=forms.Textarea(attrs={"dir": "auto", "rows": 3}),
        help_text="Why does this example fool the model (or why did you expect it to)?",
    )


class FlagForm(forms.Form):
    """Why the author flags their own example."""

    reason = forms.CharField(
        max_length=MAX_FLAG_REASON_LENGTH,
        required=False,
        widget=forms.TextInput(attrs={"dir": "auto"}),
        label="Reason (optional)",
    )
