"""JSON shape of a study for its task's owners (``/api/studies/``)."""

from __future__ import annotations

from collections.abc import Mapping

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from annotation.assistant.arms import arms_of
from annotation.assistant.selectors import arm_stats, arm_stats_as_json
from core.api.bodies import RejectUnknownFieldsMixin, StrictBooleanField, StrictIntegerField
from tasks.models import Round, Task

from .links import entry_link
from .models import Study


class _FlagField(StrictBooleanField):
    """``StrictBooleanField`` that also takes the field's own default when a form-encoded body leaves the
    flag out (DRF then passes ``default_empty_html``, a ``bool``, which the strict field would refuse)."""

    def to_internal_value(self, data):
        if isinstance(data, bool):
            return data
        return super().to_internal_value(data)


class StudySerializer(RejectUnknownFieldsMixin, serializers.ModelSerializer):
    """A study: the round it collects for (``task`` slug and ``round`` number, set on creation only), what
    one submission is and pays (amounts as decimal strings in ``currency``), its limits, and the exact
    ``entry_link`` to give the platform (with ``entry_key``, the link's secret; ``rotate_entry_key: true``
    on an update replaces it, and the old link stops working). ``ended_at``: when the study ended with its
    round (null while it runs; it then takes nobody and cannot be opened again). Read-only fields sent in a
    body are a 400; ``is_open`` defaults to true. The study's rules are ``Study.clean``'s (field errors)."""

    id = serializers.UUIDField(source="public_id", read_only=True)
    task = serializers.SlugRelatedField(slug_field="slug", queryset=Task.objects.all(), source="round.task")
    round = StrictIntegerField(source="round.number", min_value=1)
    examples_required = StrictIntegerField(min_value=0, required=False)
    validations_required = StrictIntegerField(min_value=0, required=False)
    max_participants = StrictIntegerField(min_value=1)
    time_limit_minutes = StrictIntegerField(min_value=1, required=False)
    is_open = _FlagField(required=False, default=True)  # also when a form body leaves it out
    entry_link = serializers.SerializerMethodField(help_text="The exact link to give the platform.")
    rotate_entry_key = _FlagField(write_only=True, required=False, default=False)
    participants = serializers.SerializerMethodField(help_text="Participations by status.")
    assistant_arms = serializers.SerializerMethodField(
        help_text="The round's figures per arm of the task's annotation-assistant study "
        "(as GET /api/tasks/{slug}/rounds/{n}/arms/); null when the task has none."
    )

    class Meta:
        model = Study
        fields = [
            "id",
            "task",
            "round",
            "name",
            "platform",
            "examples_required",
            "validations_required",
            "reward",
            "pay_per_example",
            "pay_per_validation",
            "bonus_per_verified_fooling",
            "currency",
            "max_participants",
            "completion_code",
            "completion_url",
            "time_limit_minutes",
            "consent_text",
            "is_open",
            "entry_key",
            "entry_link",
            "rotate_entry_key",
            "participants",
            "assistant_arms",
            "created_at",
            "ended_at",
        ]
        read_only_fields = ["entry_key", "created_at", "ended_at"]
        extra_kwargs = {
            name: {"min_value": 0}
            for name in ("reward", "pay_per_example", "pay_per_validation", "bonus_per_verified_fooling")
        }

    def to_internal_value(self, data):
        """Refuse read-only fields sent in the body (``id``, ``entry_key``, ``entry_link``,
        ``participants``, ``created_at``, ``ended_at``) with a 400 under each, as unknown fields are."""
        if isinstance(data, Mapping):
            sent = sorted(name for name in data if name in self.fields and self.fields[name].read_only)
            if sent:
                raise serializers.ValidationError(
                    {name: ["Read-only; it cannot be set (leave it out)."] for name in sent}
                )
        return super().to_internal_value(data)

    def get_entry_link(self, study: Study) -> str:
        request = self.context.get("request")
        return entry_link(study, request.build_absolute_uri("/") if request else "")

    @extend_schema_field({"type": "array", "nullable": True, "items": {"type": "object"}})
    def get_assistant_arms(self, study: Study) -> list | None:
        if study.pk is None or not arms_of(study.round.task.cfg):
            return None
        return arm_stats_as_json(arm_stats(study.round))

    def get_participants(self, study: Study) -> dict[str, int]:
        counts = {status: 0 for status in ("active", "completed", "returned", "abandoned")}
        for status in study.participations.values_list("status", flat=True):
            counts[status] += 1
        return counts

    def validate(self, attrs):
        round_data = attrs.pop("round", None)
        if self.instance is None:
            task, number = round_data["task"], round_data["number"]
            round_ = Round.objects.filter(task=task, number=number).first()
            if round_ is None:
                raise serializers.ValidationError({"round": [f"{task.slug} has no round {number}."]})
            attrs["round"] = round_
        elif round_data is not None and (
            round_data.get("task", self.instance.round.task) != self.instance.round.task
            or round_data.get("number", self.instance.round.number) != self.instance.round.number
        ):
            raise serializers.ValidationError({"round": ["A study's task and round cannot change."]})
        rotate = attrs.pop("rotate_entry_key", False)
        study = self.instance or Study()
        for name, value in attrs.items():
            setattr(study, name, value)
        try:
            study.full_clean(exclude=["entry_key"])
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.message_dict) from None
        attrs["_rotate"] = rotate
        return attrs
