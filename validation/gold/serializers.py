"""JSON shapes of the gold API (owners only): gold items, a new gold item, gold accuracy per validator."""

from __future__ import annotations

from rest_framework import serializers

from annotation.serializers import TextField
from core.api.bodies import RejectUnknownFieldsMixin

from ..models import GoldItem, Validation
from .services import MAX_NOTE_LENGTH


class GoldItemSerializer(serializers.ModelSerializer):
    """A gold item: its example and round, the known verdict, how many validators answered it and how
    many of them right; ``retired_at`` set when it is no longer served."""

    round = serializers.IntegerField(source="example.round.number", read_only=True)
    answers = serializers.IntegerField(source="n_answers", read_only=True)
    correct = serializers.IntegerField(source="n_correct", read_only=True)

    class Meta:
        model = GoldItem
        fields = [
            "id",
            "example",
            "round",
            "verdict",
            "note",
            "answers",
            "correct",
            "created_at",
            "retired_at",
        ]
        read_only_fields = fields


class GoldItemCreateSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    """The body of ``POST /api/tasks/{slug}/gold/``: an example id of the task, its known verdict, a note."""

    example = serializers.IntegerField(min_value=1, max_value=2**31 - 1)
    verdict = serializers.ChoiceField(choices=Validation.Verdict.choices)
    note = TextField(required=False, default="", allow_blank=True, max_length=MAX_NOTE_LENGTH)


class GoldAccuracySerializer(serializers.Serializer):
    """One validator's gold record on the task: ``accuracy`` = correct / answered (null with none)."""

    validator = serializers.CharField(help_text="Username.")
    answered = serializers.IntegerField()
    correct = serializers.IntegerField()
    accuracy = serializers.FloatField(allow_null=True)
    held = serializers.BooleanField(help_text="Held for review on this task.")
