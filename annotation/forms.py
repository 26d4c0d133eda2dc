"""Forms built from the task config: one field per input field, a choice of labels, a client token."""

from __future__ import annotations

import time
import uuid

from django import forms
from django.core import signing
from django.core.validators import ProhibitNullCharactersValidator

from core.text_rules import ascii_id
from tasks.config import TaskConfig
from tasks.kinds import labelled, span_answers

from .services import MAX_EXPLANATION_LENGTH, MAX_FLAG_REASON_LENGTH, NON_FIELD, ExampleError, clean_inputs
from .submissions import UNSTAMPED, Submission

_START_SALT = "annotation.example-form.started"
# Longer than any real writing session; beyond it "time taken" means the tab was left open.
_MAX_TIME_TAKEN_MS = 24 * 3600 * 1000
EXPIRED_FORM = "The form had expired; check your text and send it again."
# The hidden field holding a span answer's code-point offset into the passage.
SPAN_START_FIELD = "answer_start"


def _now_ms() -> int:
    return int(time.time() * 1000)


def signed_start(client_token: uuid.UUID | str, context_id: int | None = None) -> str:
    """The form's stamp: ``[client_token, render time in ms, context id or None]`` signed together, so
    time taken can neither be made up nor replayed, and the form names the context it was served with.

    Signing the token with the time ties the stamp to one form: a ``started`` copied from an older
    form (to claim a longer time) does not match the new form's token and is ignored. The context id is
    the one the page showed with this form (None for a task without contexts): ``ExampleForm
    .stamped_context`` reads it back, and the create page saves the form on that context or refuses it.
    """
    return signing.dumps([str(client_token), _now_ms(), context_id], salt=_START_SALT)


def _read_stamp(started, client_token) -> list | None:
    """``[token, render time, (context id)]`` of ``started`` when it is validly signed for
    ``client_token``; None otherwise."""
    try:
        stamp = signing.loads(str(started or ""), salt=_START_SALT)
    except (signing.BadSignature, TypeError, ValueError):
        return None
    token = _parse_token(client_token)
    if token is None or not isinstance(stamp, list) or len(stamp) < 2 or stamp[0] != str(token):
        return None
    return stamp


def _parse_token(value) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value).strip()) if value else None
    except ValueError:
        return None


class _NoNulMixin:
    """Never write a NUL byte back into the page when a submitted value is shown again."""

    def format_value(self, value):
        """The value as the widget renders it, without NUL characters."""
        value = super().format_value(value)
        return value.replace("\x00", "") if isinstance(value, str) else value


class TextArea(_NoNulMixin, forms.Textarea):
    """A textarea that drops NULs from the value it shows."""


class HiddenInput(_NoNulMixin, forms.HiddenInput):
    """A hidden input that drops NULs from the value it holds."""


def _without_null_validator(field: forms.CharField) -> forms.CharField:
    """Leave NUL (like every other control character) to the service, which names it in one message."""
    field.validators = [v for v in field.validators if not isinstance(v, ProhibitNullCharactersValidator)]
    return field


class ServiceErrorsMixin:
    """Shows a service's ``ExampleError`` on the form's fields (or above it)."""

    def add_service_errors(self, exc: ExampleError) -> None:
        """Show ``exc``'s messages on the matching fields, and above the form for any other key.

        A field that already has an error keeps only that one: the service, seeing no cleaned value
        for it, would report a second, wrong problem (such as "required").
        """
        for name, messages in exc.errors.items():
            key = name if name in self.fields and name != NON_FIELD else None
            if key is not None and key in self.errors:
                continue
            for message in messages:
                self.add_error(key, message)


class ExampleForm(ServiceErrorsMixin, forms.Form):
    """The create form of a task. Input and target checks are the service's (``clean_inputs``).

    Hidden fields: ``client_token`` (a UUID made when the form is rendered; a resubmission with the
    same token is the same example) and ``started`` (the token, the render time and the id of the context
    served with the form, signed together: ``signed_start``). A missing or malformed token is an error
    above the fields, and the bound form gets a fresh token (``renew_token``) so that sending it again
    works.

    ``context_id``: the context the form is served with (None for none); it is signed into ``started``,
    also when the token is renewed. The page carries the context's id apart, in its own hidden field
    ``context`` (``annotation/create.html``), next to the context's text.
    """

    client_token = _without_null_validator(forms.CharField(widget=HiddenInput, required=False))
    started = _without_null_validator(forms.CharField(widget=HiddenInput, required=False))
    # The id of the annotation assistant's suggestion this example took (annotation.assistant), set by the
    # page's script when the writer takes one; checked by the service.
    suggestion = _without_null_validator(forms.CharField(widget=HiddenInput, required=False, max_length=20))

    def __init__(self, cfg: TaskConfig, *args, context_id: int | None = None, **kwargs):
        kwargs.setdefault("initial", {})
        token = kwargs["initial"].setdefault("client_token", uuid.uuid4())
        kwargs["initial"].setdefault("started", signed_start(token, context_id))
        super().__init__(*args, **kwargs)
        self.cfg = cfg
        self.context_id = context_id
        for spec in cfg.input_fields:
            limit = cfg.max_length_of(spec)
            help_text = spec.get("help", "")
            self.fields[spec["name"]] = _without_null_validator(
                forms.CharField(
                    label=spec.get("label", spec["name"]),
                    required=False,  # empty and whitespace-only are the service's call, with its message
                    strip=False,
                    help_text=(help_text + " " if help_text else "") + f"At most {limit:,} characters.",
                    widget=TextArea(
                        attrs={
                            "dir": "auto",
                            "class": "statement",
                            "placeholder": spec.get("placeholder", ""),
                            # The page's script shows "123 / 2,000" from this (code points, as the
                            # service counts); no maxlength: a browser counts UTF-16 units and would
                            # cut emoji early.
                            "data-max-length": limit,
                        }
                    ),
                )
            )
        target = cfg.target_field
        self.target_name = target["name"]
        self.input_names = [spec["name"] for spec in cfg.input_fields]
        if labelled(cfg):
            self.fields[target["name"]] = forms.ChoiceField(
                label=target.get("label", target["name"]),
                choices=[(label, label) for label in cfg.labels],
                widget=forms.RadioSelect,
                error_messages={
                    "required": "Choose the label you intend.",
                    "invalid_choice": f"Choose one of: {', '.join(cfg.labels)}.",
                },
            )
        self.span_target = span_answers(cfg)
        self.span_context_index = next(
            (i for i, spec in enumerate(cfg.context_fields) if spec["name"] == target.get("context_field")),
            -1,
        )
        if self.span_target:
            self._add_span_fields(target)
        # Field order: inputs, then the target, then the hidden fields.
        self.order_fields([*self.input_names, self.target_name])

    def _add_span_fields(self, target: dict) -> None:
        """A span target: the answer text (selected in the passage or typed) and its hidden code-point
        offset, which the page's script fills from the selection (``annotation/_span_select.html``) and
        clears when the answer is typed. No offset: the server finds the answer in the passage."""
        help_text = target.get("help", "Select the answer in the passage, or type it exactly as it appears.")
        self.fields[target["name"]] = _without_null_validator(
            forms.CharField(
                label=target.get("label", target["name"]),
                required=False,  # the service says what is wrong with a missing answer
                strip=False,
                help_text=help_text,
                widget=forms.TextInput(attrs={"dir": "auto", "class": "span-answer", "autocomplete": "off"}),
            )
        )
        self.fields[SPAN_START_FIELD] = _without_null_validator(
            forms.CharField(required=False, widget=HiddenInput(attrs={"class": "span-answer-start"}))
        )

    def clean_answer_start(self) -> int | None:
        """The selection's code-point offset; a missing or malformed one is None (the server then
        finds the answer in the passage)."""
        value = (self.cleaned_data.get(SPAN_START_FIELD) or "").strip()
        # At most 9 digits: a passage is far shorter.
        return ascii_id(value)

    def clean_client_token(self) -> uuid.UUID | None:
        """The submitted token as a UUID; None when it is missing or malformed."""
        return _parse_token(self.cleaned_data.get("client_token"))

    def clean(self):
        """Check inputs and target by the service's rules; a missing or invalid token gets renewed."""
        data = super().clean()
        if data.get("client_token") is None:
            self.add_error(None, EXPIRED_FORM)
            self.renew_token()
        target = data.get(self.target_name)
        if self.span_target:
            # The passage is not known here: the service resolves the span against it when storing.
            target = {"answer": target or "", "answer_start": data.get(SPAN_START_FIELD)}
        try:
            inputs, target = clean_inputs(self.cfg, {n: data.get(n, "") for n in self.input_names}, target)
        except ExampleError as exc:
            if self.span_target:
                exc.errors.pop("context", None)  # checked with the served passage by the service
                if not exc.errors:
                    data[self.target_name] = target
                    return data
            self.add_service_errors(exc)  # skips the fields that already have an error
            return data
        data.update(inputs)
        data[self.target_name] = target
        return data

    def renew_token(self) -> uuid.UUID:
        """Give the bound form a fresh ``client_token`` and ``started``: the next send is a new example.

        The text typed so far stays in the form. Returns the new token.
        """
        token = uuid.uuid4()
        self.data = self.data.copy()
        self.data["client_token"] = str(token)
        self.data["started"] = signed_start(token, self.context_id)
        return token

    def stamped_context(self):
        """The id of the context this bound form was served with, read from its signed stamp
        (``signed_start``): an int, None for a form served without a context, or ``UNSTAMPED`` when the
        stamp is missing, forged, signed for another token or from a page that did not name its context.

        Read from the submitted data, so it can be asked before ``is_valid``.
        """
        stamp = _read_stamp(self.data.get("started"), self.data.get("client_token"))
        if stamp is None or len(stamp) < 3:
            return UNSTAMPED
        context_id = stamp[2]
        if context_id is None or (isinstance(context_id, int) and not isinstance(context_id, bool)):
            return context_id
        return UNSTAMPED

    def submission(self, task, annotator) -> Submission:
        """The example as this bound form sent it (``submissions.Submission``): its cleaned fields when
        they are valid (``valid`` False otherwise), the context it sends and the one its stamp names, the
        round it was served in, its token and the time taken."""
        valid = self.is_valid()
        return Submission(
            task=task,
            annotator=annotator,
            inputs=self.inputs if valid else None,
            target=self.target if valid else None,
            valid=valid,
            context_sent=(self.data.get("context") or "").strip() or None,
            context_stamped=self.stamped_context(),
            round_sent=self.data.get("round"),
            client_token=self.cleaned_data["client_token"] if valid else None,
            time_taken_ms=self.time_taken_ms if valid else None,
            suggestion_id=(self.data.get("suggestion") or "").strip() or None,
        )

    @property
    def choice_rows(self) -> list[tuple]:
        """A label target's choices as ``(radio, definition)`` pairs, in the config's label order:
        each radio a bound subwidget (``tag``, ``id_for_label``, ``choice_label``) for the page's
        fieldset, each definition from the config's ``label_descriptions`` ("" without one). Empty for
        span targets."""
        if self.span_target or self.target_name not in self.fields:
            return []
        descriptions = self.cfg.label_descriptions
        return [(radio, descriptions.get(radio.data["value"], "")) for radio in self[self.target_name]]

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
        """Milliseconds since the form was rendered, or None if the start stamp is missing or forged.

        A stamp signed for another token than the submitted one (replayed from an older form) counts
        as missing.
        """
        stamp = _read_stamp(self.cleaned_data.get("started"), self.cleaned_data.get("client_token"))
        started = stamp[1] if stamp is not None else None
        if not isinstance(started, int) or isinstance(started, bool):
            return None
        taken = _now_ms() - started
        return taken if 0 <= taken <= _MAX_TIME_TAKEN_MS else None


class ExplanationForm(ServiceErrorsMixin, forms.Form):
    """The author's explanation of their example.

    No length check here: Django would count a CRLF as two characters where the browser's
    ``maxlength`` counts a line break as one. The service counts after normalising, with its message.
    """

    explanation = _without_null_validator(
        forms.CharField(
            strip=False,
            required=False,
            widget=TextArea(attrs={"dir": "auto", "rows": 3, "maxlength": MAX_EXPLANATION_LENGTH}),
            label="Your explanation",
            help_text="Why does this example fool the model (or why did you expect it to)?",
        )
    )


class FlagForm(ServiceErrorsMixin, forms.Form):
    """Why the author flags their own example (length and characters are checked by the service)."""

    reason = _without_null_validator(
        forms.CharField(
            required=False,
            strip=False,
            widget=TextArea(attrs={"dir": "auto", "rows": 2, "maxlength": MAX_FLAG_REASON_LENGTH}),
            label="Reason (optional)",
        )
    )
