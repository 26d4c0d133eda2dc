"""JSON shapes of the validation API: the example served to a validator, and a verdict."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from annotation.models import Example
from annotation.serializers import MODEL_OUTPUT_SCHEMA, TextField, model_outputs
from core.api.bodies import RejectUnknownFieldsMixin, StrictBooleanField
from core.api.queries import QueryIntegerField, StrictQuerySerializer

from .models import Validation
from .selectors import QueueSummary
from .services import is_given_target_example, is_rubric_example


def validator_fields(example: Example) -> dict:
    """What a validator may read of the author's judgement of ``example``: decided here only, for every
    route that serves an example to a validator (the validate page and the owners' review page through
    ``views._shown``; ``GET /api/tasks/{slug}/validations/next/`` through ``ServedExampleSerializer``).

    Returns ``{"unanchored": bool, "target": ..., "explanation": str | None, "model_wrong": bool | None,
    "model": bool}``; ``model`` False: the model's answer is never shown (uncertainty mode: its
    probabilities would anchor the label).

    * **Unanchored** validation (``services.is_rubric_example``: a red-teaming conversation, or a replayed
      answer opened for rating): the validator answers the rubric as they judge it themselves
      (docs/generative.md, "Validation by rubric"), so every field of the author's judgement is None:
      their rubric answers (``target``), their verdict (``model_wrong``) and their ``explanation``.
    * In **uncertainty mode** (``services.is_given_target_example``) validation is unanchored too: the
      validator gives the label (or span) themselves, never seeing the author's, nor the model's answer.
    * **Anchored** validation (a labelled example, a multiple-choice item): the validator judges the
      author's target, so it is served with the author's explanation of it, and ``model_wrong`` (whether
      the model's answer differs from it; the model's answer may still be withheld until asked).

    The author's categories (``tags``) and ``metadata`` (a conversation's ``failed_questions``, the model
    asked, costs) are never among them, whatever the kind; nor is the author.

    Where validation is unanchored, the validator's own verdict is withheld from them too (the API's
    answer to their vote, the page's undo offer, a second vote's message): the rubric's verdict says
    whether their answers agreed with the author's, so showing it, then letting them undo and answer
    again, would let them learn the author's judgement and agree with it.
    """
    if is_given_target_example(example):
        return {"unanchored": True, "target": None, "explanation": None, "model_wrong": None, "model": False}
    if is_rubric_example(example):
        return {"unanchored": True, "target": None, "explanation": None, "model_wrong": None, "model": True}
    return {
        "model": True,
        "unanchored": False,
        "target": example.target,
        "explanation": example.explanation,
        "model_wrong": example.model_wrong,
    }


class ServedExampleSerializer(serializers.ModelSerializer):
    """What a validator sees of an example: context, inputs, and of the author's judgement only what
    ``validator_fields`` gives (null for a red-teaming conversation, validated unanchored: ``target``,
    ``explanation`` and ``model_wrong``); the model outputs. Never the author, the categories (tags) or
    the metadata. With ``hide_model_answer`` true in the serializer's context, ``model_outputs`` and
    ``model_wrong`` (which tells the model's answer apart from the intended one) are null: the model's
    answer is withheld until asked, as on the validate page."""

    round = serializers.IntegerField(source="round.number", read_only=True)
    context = serializers.SerializerMethodField(help_text="The context's id and data, or null.")
    inputs = serializers.JSONField(read_only=True)
    target = serializers.SerializerMethodField(
        help_text="The author's intended target; null for a red-teaming conversation, whose validators "
        "answer the rubric without seeing the author's answers (unanchored)."
    )
    explanation = serializers.SerializerMethodField(
        help_text='The author\'s explanation of their target ("" when they wrote none); null for a '
        "red-teaming conversation (unanchored)."
    )
    model_wrong = serializers.SerializerMethodField(
        help_text="Whether the model's answer differs from the intended one; null while the model's "
        "answer is withheld (model_answer_hidden), when no model scored it, or for a red-teaming "
        "conversation (its author's rubric judgement, not shown to validators)."
    )
    model_outputs = serializers.SerializerMethodField(
        help_text="The target models' outputs; null while the model's answer is withheld "
        "(model_answer_hidden: ask with ?reveal=model), and always in uncertainty mode."
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
        return validator_fields(example)["target"]

    @extend_schema_field({"type": "string", "nullable": True})
    def get_explanation(self, example: Example) -> str | None:
        return validator_fields(example)["explanation"]

    def _hidden(self) -> bool:
        return bool(self.context.get("hide_model_answer"))

    @extend_schema_field({"type": "boolean", "nullable": True})
    def get_model_wrong(self, example: Example) -> bool | None:
        return None if self._hidden() else validator_fields(example)["model_wrong"]

    @extend_schema_field({"type": "array", "items": MODEL_OUTPUT_SCHEMA, "nullable": True})
    def get_model_outputs(self, example: Example) -> list[dict] | None:
        return None if self._hidden() or not validator_fields(example)["model"] else model_outputs(example)


class QueueSummarySerializer(serializers.Serializer):
    """Why the queue is empty: open examples of the round, and those the caller wrote, already judged,
    or that others hold right now; the round's written and pending examples; and ``reason``, the one
    word for it (``validation.selectors.QueueSummary.reason``)."""

    open = serializers.IntegerField()
    own = serializers.IntegerField()
    judged = serializers.IntegerField()
    claimed = serializers.IntegerField()
    written = serializers.IntegerField(
        help_text="The round's written examples (not imported, not retracted), open or not."
    )
    pending = serializers.IntegerField(
        help_text="Those of them still pending, open for validation or not (not model-fooling where only "
        "those are validated, not scored yet, or gold items)."
    )
    reason = serializers.ChoiceField(
        choices=QueueSummary.REASONS,
        help_text="unavailable: open examples, none the caller may take (own, judged, claimed say why); "
        "nothing_written: nobody has written an example in the round; none_open: pending examples, none "
        "open for validation; settled: every example that needed validation is settled.",
    )


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
    given_target = serializers.JSONField(
        required=False,
        default=None,
        help_text="A task in uncertainty mode: the label the validator judges right (or for a span task "
        '{"answer": str, "answer_start": int}, a span of the passage), given without seeing the author\'s; '
        "it gives the verdict: correct when it agrees with the author's.",
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
    verdict = serializers.CharField(
        allow_null=True,
        help_text="null for a red-teaming conversation (validated unanchored): the verdict would say whether "
        "the caller's rubric answers agreed with the author's (validator_fields).",
    )
    corrected_label = serializers.CharField(
        allow_null=True,
        help_text="null where the verdict is (validated unanchored): it would say the same.",
    )
    reason = serializers.CharField(allow_blank=True)
    settled = serializers.BooleanField()
    example_status = serializers.CharField()
