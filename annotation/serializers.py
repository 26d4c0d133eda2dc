"""JSON shapes of examples for the API, and the create body DERIVED FROM THE TASK CONFIG.

``example_create_serializer(task)`` builds a serializer class from ``TaskConfig``: one text field per
input field, the target field by name (a label for ``multiclass`` targets, ``{"answer", "answer_start"}``
for ``context_span`` targets), ``context`` (required when the task has context fields) and optional
``explanation`` and ``metadata``. A task defined only by its config therefore gets a working endpoint.
The service (``annotation.services.create_example``) still makes every content check (lengths after
CRLF->LF, control characters, visible characters, span offsets) with its own messages.
"""

from __future__ import annotations

import json

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from annotation.exports import pseudonym
from core.api.bodies import RejectUnknownFieldsMixin, StrictIntegerField
from core.api.lookups import MAX_ID
from core.api.queries import NO_NUL_PATTERN
from core.text_rules import control_character_message, first_control_character
from tasks import selectors as task_selectors
from tasks.kinds import labelled, span_answers
from tasks.models import Task

from .models import Example, Prediction

MAX_METADATA_CHARS = 10_000
MAX_METADATA_DEPTH = 10

MODEL_OUTPUT_SCHEMA = {
    "type": "object",
    "description": (
        "One target model's output. Label tasks: model, model_name, status, runtime, label, probabilities "
        "(label -> probability). Span (QA) tasks: model, model_name, status, runtime, answer, answer_start, "
        "score. A failed model has status 'failed' and null outputs. runtime is what the model answered "
        "on (torch, onnx-fp32, onnx-int8), null for a remote endpoint or an older prediction."
    ),
    "properties": {
        "model": {"type": "integer"},
        "model_name": {"type": "string"},
        "status": {"type": "string", "enum": ["ok", "failed"]},
        "runtime": {"type": "string", "nullable": True},
        "label": {"type": "string", "nullable": True},
        "probabilities": {"type": "object", "additionalProperties": {"type": "number"}},
        "answer": {"type": "string", "nullable": True},
        "answer_start": {"type": "integer", "nullable": True},
        "score": {"type": "number", "nullable": True},
    },
    "required": ["model", "model_name", "status"],
}


def model_outputs(example: Example) -> list[dict]:
    """The target models' outputs on ``example`` in the API's shape (see ``MODEL_OUTPUT_SCHEMA``)."""
    is_span = span_answers(example.round.task.cfg)
    rows = []
    for p in example.predictions.all():
        ok = p.status == Prediction.Status.OK
        row = {
            "model": p.model_id,
            "model_name": p.model.public_name,
            "status": p.status,
            "runtime": p.runtime or None,
        }
        if is_span:
            row["answer"] = p.output.get("answer", p.label or None) if ok else None
            start = p.output.get("answer_start") if ok else None
            row["answer_start"] = start if isinstance(start, int) and not isinstance(start, bool) else None
            score = p.output.get("score") if ok else None
            row["score"] = float(score) if isinstance(score, int | float) else None
        else:
            row["label"] = p.label if ok else None
            probabilities = p.output.get("probabilities", {}) if ok else {}
            row["probabilities"] = {
                str(k): float(v) for k, v in probabilities.items() if isinstance(v, int | float)
            }
        rows.append(row)
    return rows


class VoteSerializer(serializers.Serializer):
    """One verdict on an example as its history shows it: who (a per-round pseudonym), what, when, and
    whether it was the owner verdict that settled it. Validators' reasons are for the task's owners
    (the review page and the export)."""

    validator = serializers.SerializerMethodField(help_text="Pseudonymous validator id within the round.")
    verdict = serializers.CharField()
    corrected_label = serializers.CharField(allow_blank=True, help_text='The label it should have, or "".')
    is_owner_verdict = serializers.BooleanField()
    created_at = serializers.DateTimeField()

    def get_validator(self, validation) -> str:
        # validation.example is the example it was prefetched from (no query).
        return pseudonym(validation.example.round_id, validation.validator_id)


class ExampleSerializer(serializers.ModelSerializer):
    """An example as its author or a task owner sees it; the annotator only as a per-round pseudonym.

    ``annotator`` is ``annotation.exports.pseudonym`` (the id exports use), never a username;
    ``mine`` says whether the caller wrote it. ``model_unsure``: in uncertainty mode, whether the target
    was unsure of it (the server's decision, ``tasks.uncertainty``); null in other tasks. Its history (docs/domain.md, "Example history"):
    ``created_at``, ``settled_at``, ``retracted_at``, ``flagged_at`` (null until that change happens)
    and ``validations``, every verdict oldest first. Read it through ``selectors.with_history``.
    """

    task = serializers.CharField(source="round.task.slug", read_only=True)
    round = serializers.IntegerField(source="round.number", read_only=True)
    context = serializers.IntegerField(source="context_id", read_only=True, allow_null=True)
    inputs = serializers.JSONField(read_only=True, help_text="Input field name -> text.")
    target = serializers.JSONField(
        read_only=True, help_text='The intended label, or {"answer": str, "answer_start": int}.'
    )
    metadata = serializers.JSONField(read_only=True)
    tags = serializers.JSONField(read_only=True)
    model_outputs = serializers.SerializerMethodField()
    annotator = serializers.SerializerMethodField(help_text="Pseudonymous annotator id within the round.")
    mine = serializers.SerializerMethodField()
    validations = VoteSerializer(many=True, read_only=True, help_text="Every verdict, oldest first.")

    class Meta:
        model = Example
        fields = [
            "id",
            "task",
            "round",
            "context",
            "inputs",
            "target",
            "explanation",
            "metadata",
            "tags",
            "status",
            "model_wrong",
            "model_unsure",
            "prediction_status",
            "model_outputs",
            "is_retracted",
            "is_flagged_by_annotator",
            "flag_reason",
            "source",
            "annotator",
            "mine",
            "created_at",
            "settled_at",
            "retracted_at",
            "flagged_at",
            "validations",
        ]
        read_only_fields = fields

    @extend_schema_field({"type": "array", "items": MODEL_OUTPUT_SCHEMA})
    def get_model_outputs(self, example: Example) -> list[dict]:
        return model_outputs(example)

    @extend_schema_field({"type": "string", "nullable": True})
    def get_annotator(self, example: Example) -> str | None:
        return pseudonym(example.round_id, example.annotator_id)

    def get_mine(self, example: Example) -> bool:
        request = self.context.get("request")
        return bool(request and request.user.is_authenticated and example.annotator_id == request.user.pk)


@extend_schema_field({"type": "string", "pattern": NO_NUL_PATTERN})
class TextField(serializers.CharField):
    """A JSON string, kept exactly (no trimming); numbers and other types are refused, not converted.

    NUL (U+0000) is refused (DRF's validator; PostgreSQL cannot store it), and the schema says so.
    """

    default_error_messages = {"invalid": "Must be text (a JSON string)."}

    def __init__(self, **kwargs):
        kwargs.setdefault("trim_whitespace", False)
        kwargs.setdefault("allow_blank", True)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


def _text_problem(text: str, plural: str, label: str) -> str | None:
    """NUL (which PostgreSQL cannot store), or the control characters and bidi overrides every text field
    refuses (``text_rules.first_control_character``: C0 but LF and tab, C1, U+202D/E)."""
    if "\x00" in text:
        return f"{plural} cannot contain the NUL character (U+0000)."
    char = first_control_character(text)
    return None if char is None else control_character_message(label, char)


def _metadata_problem(value, depth: int = 0) -> str | None:
    if depth > MAX_METADATA_DEPTH:
        return f"Nested deeper than {MAX_METADATA_DEPTH} levels."
    if isinstance(value, dict):
        for k, v in value.items():
            problem = _text_problem(k, "Keys", "A key") or _metadata_problem(v, depth + 1)
            if problem:
                return problem
    elif isinstance(value, list):
        for v in value:
            problem = _metadata_problem(v, depth + 1)
            if problem:
                return problem
    elif isinstance(value, str):
        return _text_problem(value, "Text", "A text")
    return None


class MetadataField(serializers.JSONField):
    """A JSON object of at most ``MAX_METADATA_CHARS`` characters (as compact JSON), without NUL."""

    def to_internal_value(self, data):
        data = super().to_internal_value(data)
        if not isinstance(data, dict):
            raise serializers.ValidationError("Must be a JSON object.")
        problem = _metadata_problem(data)
        if problem:
            raise serializers.ValidationError(problem)
        size = len(json.dumps(data, ensure_ascii=False, separators=(",", ":")))
        if size > MAX_METADATA_CHARS:
            raise serializers.ValidationError(
                f"Too large: {size:,} characters as JSON, at most {MAX_METADATA_CHARS:,} allowed."
            )
        return data


class SpanTargetSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    """A span (QA) target: the answer text and its character offset in the context field.

    ``answer_start`` (code points) may be left out: the server then takes the answer's first
    whole-character occurrence in the passage, and refuses an answer that is not there.
    """

    answer = TextField(allow_blank=False)
    answer_start = StrictIntegerField(min_value=0, max_value=MAX_ID, required=False, allow_null=True)


class NoContextField(serializers.Field):
    """``context`` of a task without contexts: left out or null, nothing else. Any other value, of
    whatever type, gets the one message that says why, not a type error about the value."""

    default_error_messages = {"no_contexts": "This task has no contexts; leave context out."}

    def __init__(self, **kwargs):
        super().__init__(required=False, allow_null=True, **kwargs)

    def to_internal_value(self, data):
        """Raises ``ValidationError`` (above) for any value; null never reaches it (``allow_null``)."""
        self.fail("no_contexts")

    def to_representation(self, value):
        return value


class ExampleCreateBase(RejectUnknownFieldsMixin, serializers.Serializer):
    """Fields every task's create body has; ``example_create_serializer`` adds the config's fields.

    ``context["task"]`` is the task; validated data gains ``context_obj`` (a ``Context`` or None).
    """

    context = StrictIntegerField(min_value=1, max_value=MAX_ID, required=False, allow_null=True)
    explanation = TextField(required=False, default="")
    metadata = MetadataField(required=False, default=dict)
    suggestion = StrictIntegerField(
        min_value=1,
        max_value=MAX_ID,
        required=False,
        allow_null=True,
        help_text="The id of the annotation assistant's suggestion this example took "
        "(POST /api/tasks/{slug}/suggestions/), if any.",
    )

    def unknown_field_message(self) -> str:
        """The task's own fields first; ``context`` only for a task that has contexts, ``suggestion`` only
        for one with an annotation-assistant study."""
        cfg = self.context["task"].cfg
        common = [
            n
            for n in ExampleCreateBase._declared_fields
            if (n != "context" or cfg.context_fields) and (n != "suggestion" or cfg.assistant_arms)
        ]
        own = [n for n in self.fields if n not in ExampleCreateBase._declared_fields]
        return f"Unknown field; this task takes: {', '.join(own + common)}."

    def validate(self, attrs):
        task: Task = self.context["task"]
        cfg = task.cfg
        context_id = attrs.get("context")
        context = None
        if cfg.context_fields:
            # A task whose context fields are all optional (sentiment's prompt) may be written without one,
            # as on the create page.
            context_optional = all(f.get("optional", False) for f in cfg.context_fields)
            if context_id is None and not context_optional:
                raise serializers.ValidationError(
                    {"context": ["This task needs a context: send the id from contexts/next."]}
                )
            if context_id is not None:
                context = task_selectors.context_of_round(task.current_round, context_id)
                if context is None:
                    raise serializers.ValidationError({"context": ["No such context in the current round."]})
        attrs["context_obj"] = context
        # A span target's offset is checked, or found when left out (first whole-word occurrence, see core.spans.resolve_answer),
        # by annotation.services.create_example through core.spans, as on the create page.
        return attrs


def example_create_serializer(task: Task, *, with_target: bool = True) -> type[ExampleCreateBase]:
    """A serializer class for ``POST /api/tasks/{slug}/examples/`` built from ``task``'s config
    (``with_target`` False: a draft without its target, ``POST /api/tasks/{slug}/confidence/``)."""
    cfg = task.cfg
    attrs: dict = {} if cfg.context_fields else {"context": NoContextField()}
    for spec in cfg.input_fields:
        attrs[spec["name"]] = TextField(
            required=not spec.get("optional", False), help_text=spec.get("help", spec.get("label", ""))
        )
    target = cfg.target_field
    if not with_target:
        return type(f"ExampleDraft_{task.pk}", (ExampleCreateBase,), attrs)
    if labelled(cfg):
        labels = cfg.labels
        attrs[target["name"]] = serializers.ChoiceField(
            choices=labels, error_messages={"invalid_choice": f"Choose one of: {', '.join(labels)}."}
        )
    else:
        attrs[target["name"]] = SpanTargetSerializer()
    return type(f"ExampleCreate_{task.pk}", (ExampleCreateBase,), attrs)


def input_names(task: Task) -> list[str]:
    """The names of the task's input fields, in config order."""
    return [spec["name"] for spec in task.cfg.input_fields]


CREATE_BODY_SCHEMA = {
    "type": "object",
    "additionalProperties": True,
    "description": (
        "Derived from the task config (GET /api/tasks/{slug}/): one string per input field (by name), "
        "the target field by name (a label of the task for multiclass targets, or "
        '{"answer": str, "answer_start": int (optional if the answer occurs once)} for span targets), '
        "`context` (the id from contexts/next; required when the task has context fields, left out "
        "otherwise), and optional `explanation` (text) and `metadata` (a JSON object). Unknown "
        "fields are refused."
    ),
    "properties": {
        "context": {"type": "integer", "minimum": 1, "nullable": True},
        "explanation": {"type": "string"},
        "metadata": {"type": "object", "additionalProperties": True},
    },
}


class FlagSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    """The body of ``POST /api/examples/{id}/flag/``: an optional reason for the task owners."""

    reason = TextField(required=False, default="")
