"""JSON shapes of the validation API: the example served to a validator, and a verdict."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from annotation.models import Example
from annotation.serializers import MODEL_OUTPUT_SCHEMA, TextField, model_outputs
from core.api.bodies import RejectUnknownFieldsMixin, StrictBooleanField
from core.api.queries import QueryIntegerField, StrictQuerySerializer

from .models import Validation
from .services import is_rubric_example


class ServedExampleSerializer(serializers.ModelSerializer):
    """What a validator sees of an example: context, inputs, the author's intended target and the model
    outputs. Never the author. With ``hide_model_answer`` true in the serializer's context,
    ``model_outputs`` and ``model_wrong`` (which tells the model's answer apart from the intended one)
    are null: the model's answer is withheld until asked, as on the validate page. A red-teaming
    conversation (``services.is_rubric_example``) has ``target`` and ``model_wrong`` null always: its
    validators answer the rubric without seeing the author's answers, judgement or categories."""

    round = serializers.IntegerField(source="round.number", read_only=True)
    context = serializers.SerializerMethodField(help_text="The context's id and data, or null.")
    inputs = serializers.JSONField(read_only=True)
    target = serializers.SerializerMethodField(
        help_text="The author's intended target; null for a red-teaming conversation, whose validators "
        "answer the rubric without seeing the author's answers (unanchored)."
    )
    model_wrong = serializers.SerializerMethodField(
        help_text="Whether the model's answer differs from the intended one; null while the model's "
        "answer is withheld (model_answer_hidden), when no model scored it, or for a red-teaming "
        "conversation (its author's rubric judgement, not shown to validators)."
    )
    model_outputs = serializers.SerializerMethodField(
        help_text="The target models' outputs; null while the model's answer is withheld "
        "(model_answer_hidden: ask with ?reveal=model)."
    )

    class Meta:
        model = Example
        fields = ["id", "round", "context", "inputs", "target", "explanation", "model_wrong", "model_outputs"]
        read_only_fields = fields

    @extend_schema_field(
        {
            "type": "object",
            "nullable": True,
            "properties": {
                "id": {"type": "integer"},
                "data": {"type": "object", "additionalProperties": True},
            },
        }
    )
    def get_context(self, example: Example) -> dict | None:
        if example.context_id is None:
            return None
        return {"id": example.context_id, "data": example.context.data}

    @extend_schema_field({"nullable": True})
    def get_target(self, example: Example):
        return None if is_rubric_example(example) else example.target

    def _hidden(self) -> bool:
        return bool(self.context.get("hide_model_answer"))

    @extend_schema_field({"type": "boolean", "nullable": True})
    def get_model_wrong(self, example: Example) -> bool | None:
        # A red-teaming conversation's model_wrong is its author's rubric judgement, and its target their
        # answers: neither is shown to validators, who answer the rubric unanchored (tags are never served).
        if self._hidden() or is_rubric_example(example):
            return None
        return example.model_wrong

    @extend_schema_field({"type": "array", "items": MODEL_OUTPUT_SCHEMA, "nullable": True})
    def get_model_outputs(self, example: Example) -> list[dict] | None:
        return None if self._hidden() else model_outputs(example)


class QueueSummarySerializer(serializers.Serializer):
    """Why the queue is empty: open examples of the round, and those the caller wrote, already judged,
    or that others hold right now."""

    open = serializers.IntegerField()
    own = serializers.IntegerField()
    judged = serializers.IntegerField()
    claimed = serializers.IntegerField()


class NextValidationSerializer(serializers.Serializer):
    """``example`` (reserved for the caller until ``claim_expires_at``), or null with ``queue`` saying why."""

    round = serializers.IntegerField()
    example = ServedExampleSerializer(allow_null=True)
    claim_expires_at = serializers.DateTimeField(allow_null=True)
    queue = QueueSummarySerializer(allow_null=True)
    hint = serializers.CharField(
        allow_null=True,
        help_text="With an empty queue that others' claims keep empty: when to come back (the "
        "Retry-After header has the seconds); else null.",
    )
    model_answer_hidden = serializers.BooleanField(
        help_text="True when the example's model_outputs and model_wrong are withheld (null) until asked: "
        "send the same request with ?reveal=model (the claim keeps the same example). False when they "
        "are shown (asked, or the task config sets validation_shows_model_answer) or nothing was served."
    )


class NextValidationQuerySerializer(StrictQuerySerializer):
    """``?round=N`` (default: the task's current round); ``?reveal=model`` to be shown the model's answer
    (withheld otherwise, unless the task config sets ``validation_shows_model_answer``)."""

    round = QueryIntegerField(min_value=1, max_value=2**31 - 1, required=False)
    reveal = serializers.ChoiceField(
        choices=["model"],
        required=False,
        help_text="model: include the model's answer (model_outputs, model_wrong) of the served example.",
    )


class VerdictSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    """The body of ``POST /api/examples/{id}/validations/``."""

    verdict = serializers.ChoiceField(
        choices=Validation.Verdict.choices,
        required=False,
        default="",
        help_text="Required, except for a red-teaming conversation answered with rubric (the answers give "
        "the verdict; flagged still flags it).",
    )
    corrected_label = TextField(required=False, default="", max_length=100)
    reason = TextField(required=False, default="")
    rubric = serializers.DictField(
        child=serializers.CharField(),
        required=False,
        help_text="A red-teaming conversation: the validator's answers to the task's rubric, {question: "
        "answer}; they give the verdict: correct when they judge the output as its author did.",
    )
    owner_mode = StrictBooleanField(
        required=False,
        default=False,
        help_text="Task owners only: settle the example with this one verdict, as the review page does "
        "(403 for anyone else).",
    )


class ValidationResultSerializer(serializers.Serializer):
    """A recorded verdict: ``settled`` is true when this verdict settled the example (quorum reached);
    ``example_status`` is the example's status afterwards."""

    id = serializers.IntegerField()
    example = serializers.IntegerField()
    verdict = serializers.CharField()
    corrected_label = serializers.CharField(allow_blank=True)
    reason = serializers.CharField(allow_blank=True)
    settled = serializers.BooleanField()
    example_status = serializers.CharField()
