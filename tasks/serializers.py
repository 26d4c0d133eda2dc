"""JSON shapes of tasks, rounds (with their statistics) and contexts for the API."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.fields import SkipField

from core.api.queries import QueryTextField, StrictQuerySerializer
from core.money import fmt
from tasks.selectors import STRATEGIES

from .models import Context, Round, Task


class TaskSerializer(serializers.ModelSerializer):
    """A task in the task list: slug, name, labels, current round, quorum, whether it collects examples."""

    current_round = serializers.SerializerMethodField(help_text="Number of the current round, or null.")
    collecting = serializers.SerializerMethodField(help_text="True when the current round is open.")
    labels = serializers.SerializerMethodField(help_text="Target labels; empty for span (QA) tasks.")
    quorum = serializers.IntegerField(source="validation_quorum", read_only=True)

    class Meta:
        model = Task
        fields = ["slug", "name", "labels", "current_round", "collecting", "quorum"]

    def get_current_round(self, task: Task) -> int | None:
        return task.current_round.number if task.current_round_id else None

    def get_collecting(self, task: Task) -> bool:
        return bool(task.current_round_id and not task.current_round.is_closed)

    def get_labels(self, task: Task) -> list[str]:
        return task.cfg.labels


class TaskDetailSerializer(TaskSerializer):
    """A task with its instructions and config (context, input and target fields, rules, metrics)."""

    config = serializers.JSONField(read_only=True, help_text="The task config (Dynatask), as stored.")
    context_fields = serializers.SerializerMethodField()
    input_fields = serializers.SerializerMethodField()
    target_field = serializers.SerializerMethodField()
    content_warning = serializers.SerializerMethodField()
    is_owner = serializers.SerializerMethodField(help_text="True when the caller owns this task.")

    class Meta(TaskSerializer.Meta):
        fields = [
            *TaskSerializer.Meta.fields,
            "instructions",
            "content_warning",
            "context_fields",
            "input_fields",
            "target_field",
            "config",
            "is_owner",
        ]

    @extend_schema_field({"type": "array", "items": {"type": "object", "additionalProperties": True}})
    def get_context_fields(self, task: Task) -> list[dict]:
        return task.cfg.context_fields

    @extend_schema_field({"type": "array", "items": {"type": "object", "additionalProperties": True}})
    def get_input_fields(self, task: Task) -> list[dict]:
        return task.cfg.input_fields

    @extend_schema_field(OpenApiTypes.OBJECT)
    def get_target_field(self, task: Task) -> dict:
        return task.cfg.target_field

    def get_content_warning(self, task: Task) -> str:
        return task.cfg.content_warning

    def get_is_owner(self, task: Task) -> bool:
        request = self.context.get("request")
        return bool(request and task.is_owner(request.user))


class RoundCostSerializer(serializers.Serializer):
    """A round's crowd cost in one currency (``tasks.round_stats.RoundCost``): amounts as decimal strings
    with two decimals (rounded half-up), each ``per_*`` null when its count is 0."""

    currency = serializers.CharField(help_text="ISO 4217 code, e.g. GBP.")
    total = serializers.SerializerMethodField(
        help_text="Every pay ledger row of the round, reversals included."
    )
    per_collected = serializers.SerializerMethodField(help_text="total / collected examples.")
    per_validated = serializers.SerializerMethodField(
        help_text="total / collected examples settled (any status)."
    )
    per_verified_fooling = serializers.SerializerMethodField(
        help_text="total / verified model-fooling examples."
    )

    @staticmethod
    def _money(value) -> str | None:
        return None if value is None else fmt(value)

    def get_total(self, cost) -> str:
        return fmt(cost.total)

    @extend_schema_field({"type": "string", "nullable": True})
    def get_per_collected(self, cost) -> str | None:
        return self._money(cost.per_collected)

    @extend_schema_field({"type": "string", "nullable": True})
    def get_per_validated(self, cost) -> str | None:
        return self._money(cost.per_validated)

    @extend_schema_field({"type": "string", "nullable": True})
    def get_per_verified_fooling(self, cost) -> str | None:
        return self._money(cost.per_verified_fooling)


class AcrossPeopleSerializer(serializers.Serializer):
    """A rate's interval across the people who wrote the conversations (``core.clustered.ClusteredRate``,
    or its ``as_dict``): the studentized cluster bootstrap over red-teamers (docs/generative.md,
    "Intervals across people"). Shared by every API that gives an attack success rate."""

    rate = serializers.FloatField(allow_null=True, help_text="The rate, in [0, 1]; null with n = 0.")
    n = serializers.FloatField(help_text="Conversations (or replayed answers) behind the rate.")
    interval = serializers.ListField(
        child=serializers.FloatField(),
        allow_null=True,
        help_text="The 95% interval [low, high] across people; null with fewer than 5 people or no rate.",
    )
    people = serializers.IntegerField(help_text="The people who wrote them.")
    effective_sample_size = serializers.FloatField(
        allow_null=True,
        help_text="Conversations as if independent that give the same variance (Kish: n / design effect).",
    )
    interval_method = serializers.CharField(
        allow_null=True,
        help_text=(
            '"cluster bootstrap-t"; "Wilson over the effective sample" when fewer than 5 people have a '
            'success (or a failure); "Wilson over people" when people do not differ at all.'
        ),
    )
    independent_interval = serializers.ListField(
        child=serializers.FloatField(),
        allow_null=True,
        help_text="Wilson's interval over the conversations taken as independent, for comparison.",
    )

    def to_representation(self, instance) -> dict:
        """``instance.as_dict()`` (a ``ClusteredRate``), or the dict as it is (already that form)."""
        return dict(instance) if isinstance(instance, dict) else instance.as_dict()


class RedTeamRateSerializer(serializers.Serializer):
    """Verified failures of attempts for one failure category or one number of turns."""

    key = serializers.CharField(help_text='The category\'s name, or the number of turns (e.g. "2").')
    label = serializers.CharField(help_text='The category\'s label, or e.g. "2 turns".')
    attempts = serializers.IntegerField(
        help_text="Conversations judged: all of the round's for a category, those of that many turns for a length."
    )
    verified = serializers.IntegerField(
        help_text="Verified failures (with that category, or of that length)."
    )
    rate = serializers.FloatField(allow_null=True, help_text="verified / attempts; null with no attempt.")
    across_people = AcrossPeopleSerializer(
        source="clustered", allow_null=True, help_text="The rate's interval across people."
    )
    unreliable = serializers.CharField(
        help_text="Why the rate is greyed: validators' agreement below the floor on a rubric question; '' if not."
    )


class RedTeamChoiceSerializer(serializers.Serializer):
    """A red-teaming round's multiple-choice items, counted apart from the conversations."""

    items = serializers.IntegerField(help_text="Items written here, not retracted.")
    fooled = serializers.IntegerField(
        source="items_fooled", help_text="Items whose option the target picked wrong."
    )
    validated_correct = serializers.IntegerField(
        source="items_validated", help_text="Items that validators settled correct."
    )
    mer = serializers.FloatField(
        source="item_mer", allow_null=True, help_text="fooled / items; null with none."
    )


class RedTeamStatisticsSerializer(serializers.Serializer):
    """A red-teaming round's attack success rate and cost (``tasks.red_team_stats.RedTeamStats``;
    docs/generative.md, "Attack success rate"). Rates are fractions in [0, 1], null with no attempt.
    Costs are numbers in the currency of the target's prices, unrounded (a conversation's model cost is
    often a fraction of a cent; the task page rounds to two places), null when unknown.

    Nested as ``RoundStatisticsSerializer.red_team``, it takes the round's figures from the serializer
    context (``context["red_team"]``, a ``RedTeamStats``), and leaves the key out without them: other
    tasks' statistics have no ``red_team``.
    """

    attempts = serializers.IntegerField(help_text="Conversations judged by their authors with the rubric.")
    claimed_failures = serializers.IntegerField(
        source="claimed", help_text="Attempts whose author's rubric says failed."
    )
    verified_failures = serializers.IntegerField(
        source="verified", help_text="Claimed failures that validators confirmed (validated_correct)."
    )
    attack_success_rate = serializers.FloatField(
        allow_null=True, help_text="verified_failures / attempts (the generative vMER)."
    )
    across_people = AcrossPeopleSerializer(
        source="asr",
        allow_null=True,
        help_text="The attack success rate's interval across people; null with no attempt.",
    )
    claimed_rate = serializers.FloatField(allow_null=True, help_text="claimed_failures / attempts.")
    by_category = RedTeamRateSerializer(
        many=True,
        help_text=(
            "Per failure category: verified failures tagged with it / all attempts; a failure of two "
            "categories counts in both."
        ),
    )
    by_turns = RedTeamRateSerializer(
        many=True, help_text="Per number of turns: verified failures / attempts of that many turns."
    )
    cost = serializers.FloatField(
        allow_null=True, help_text="Model cost of the attempts whose cost is known; null when none is."
    )
    cost_unknown = serializers.IntegerField(help_text="Attempts without a known cost (left out of cost).")
    cost_per_verified_failure = serializers.FloatField(
        source="cost_per_verified",
        allow_null=True,
        help_text="cost / verified_failures; null with no verified failure or no known cost.",
    )
    cost_per_verified_failure_interval = serializers.SerializerMethodField(
        help_text=(
            "Its 95% interval across people [low, high]; high is null when unbounded (too few failures "
            "for an upper end); null without one."
        )
    )
    multiple_choice = RedTeamChoiceSerializer(source="*")
    rubric_agreement = serializers.SerializerMethodField(
        help_text=(
            "Validators' agreement per rubric question (tasks.rubric_agreement): {floor, questions: [{name, "
            "level, overall: {level, items, answers, alpha, interval}, by_category: {kind: {...}}}], "
            "unreliable: why every rate of the round is greyed or null, unreliable_categories: {kind: "
            "why}}; null without one."
        )
    )

    @extend_schema_field({"type": "object", "additionalProperties": True, "nullable": True})
    def get_rubric_agreement(self, stats) -> dict | None:
        return stats.agreement.as_dict() if stats.agreement is not None else None

    @extend_schema_field({"type": "array", "items": {"type": "number", "nullable": True}, "nullable": True})
    def get_cost_per_verified_failure_interval(self, stats) -> list | None:
        interval = stats.cost_per_verified_interval
        if interval is None:
            return None
        return [interval[0], None if interval[1] == float("inf") else interval[1]]

    def get_attribute(self, instance):
        """The round's ``RedTeamStats`` from the context; skipped (no key) when there is none."""
        stats = self.context.get("red_team")
        if stats is None:
            raise SkipField()
        return stats


class UncertaintyStatisticsSerializer(serializers.Serializer):
    """An uncertainty-mode round's figures (``tasks.uncertainty_stats.UncertaintyStats``), nested as
    ``RoundStatisticsSerializer.uncertainty`` from ``context["uncertainty"]``; left out without them."""

    examples = serializers.IntegerField(help_text="Examples whose unsure verdict is known.")
    unsure = serializers.IntegerField(help_text="Examples on which the target was unsure (model_unsure).")
    validated_unsure = serializers.IntegerField(help_text="Unsure examples settled validated_correct.")
    unsure_rate = serializers.FloatField(allow_null=True, help_text="unsure / examples; null with none.")
    validated_unsure_rate = serializers.FloatField(
        allow_null=True, help_text="validated_unsure / examples; null with none."
    )
    validated_unsure_interval = serializers.SerializerMethodField(
        help_text="The 95% interval of validated_unsure_rate across annotators ([low, high]); null "
        "with fewer than 5 people."
    )
    people = serializers.SerializerMethodField()
    histogram = serializers.ListField(
        child=serializers.IntegerField(),
        help_text="Target answers per bin of the task's measure: 10 equal bins of [0, 1], the value 1 in the last.",
    )

    def get_validated_unsure_interval(self, stats) -> list | None:
        interval = stats.validated.interval if stats.validated is not None else None
        return list(interval) if interval is not None else None

    def get_people(self, stats) -> int:
        return stats.validated.people if stats.validated is not None else 0

    def get_attribute(self, instance):
        """The round's ``UncertaintyStats`` from the context; skipped (no key) when there is none."""
        stats = self.context.get("uncertainty")
        if stats is None:
            raise SkipField()
        return stats


class RoundStatisticsSerializer(serializers.Serializer):
    """A round's figures, as on the task page (``tasks.round_stats.RoundCounts``).

    ``examples`` are those written on the platform and not retracted; ``scored`` those of them whose
    model verdict is known and ``unscored`` the rest (``examples = scored + unscored``). MER =
    fooling / scored; vMER = validated_fooling / scored (docs/domain.md, "MER and vMER"); both fractions
    in [0, 1], and null ("not measured") when no example of the round is scored (none collected, no
    target model, or every target failed). A red-teaming task's rounds add ``red_team``
    (``context["red_team"]``, see ``RedTeamStatisticsSerializer``).
    """

    examples = serializers.IntegerField(source="collected")
    scored = serializers.IntegerField(
        help_text="Examples whose model verdict is known (model_wrong true or false): MER's denominator."
    )
    fooling = serializers.IntegerField(help_text="Model-fooling examples (model_wrong true).")
    validated_fooling = serializers.IntegerField(
        source="verified", help_text="Model-fooling examples settled validated_correct."
    )
    mer = serializers.FloatField(
        allow_null=True, help_text="fooling / scored; null (not measured) when no example is scored."
    )
    vmer = serializers.FloatField(
        allow_null=True,
        help_text="validated_fooling / scored; null (not measured) when no example is scored.",
    )
    unscored = serializers.IntegerField(
        help_text=(
            "Examples awaiting a model verdict (target failed and to be retried, no target model, or "
            "an ask_user author yet to answer); outside MER and vMER."
        )
    )
    imported = serializers.IntegerField(help_text="Examples imported from datasets (outside MER).")
    retracted = serializers.IntegerField()
    flagged = serializers.IntegerField()
    median_time_s = serializers.FloatField(allow_null=True)
    agreement_alpha = serializers.FloatField(
        source="agreement",
        allow_null=True,
        help_text=(
            "Krippendorff's alpha (nominal) over the validators' verdicts on the round's examples (owner "
            "verdicts left out): 1 full agreement, 0 chance; null when undefined (fewer than two "
            "verdicts on any example, or all the same)."
        ),
    )
    cost = RoundCostSerializer(
        allow_null=True,
        help_text="The round's crowd pay in its currency; null when nothing was paid or in several currencies.",
    )
    costs = RoundCostSerializer(many=True, help_text="The round's crowd pay, one entry per currency.")
    red_team = RedTeamStatisticsSerializer(
        required=False,
        help_text="Only on a red-teaming task's rounds: the attack success rate and the model cost.",
    )
    uncertainty = UncertaintyStatisticsSerializer(
        required=False,
        help_text="Only on the rounds of a task in uncertainty mode: the unsure examples and the histogram.",
    )


class RoundSerializer(serializers.ModelSerializer):
    """A round with its statistics; ``context["counts"]`` maps round id to ``RoundCounts`` and, for a
    red-teaming task, ``context["red_team"]`` round id to ``RedTeamStats`` (``statistics.red_team``)."""

    is_current = serializers.SerializerMethodField()
    statistics = serializers.SerializerMethodField()

    class Meta:
        model = Round
        fields = ["number", "description", "is_current", "is_closed", "started_at", "closed_at", "statistics"]

    def get_is_current(self, round_: Round) -> bool:
        return round_.task.current_round_id == round_.pk

    @extend_schema_field(RoundStatisticsSerializer)
    def get_statistics(self, round_: Round) -> dict:
        red_team = self.context.get("red_team", {}).get(round_.pk)
        uncertainty = self.context.get("uncertainty", {}).get(round_.pk)
        return RoundStatisticsSerializer(
            self.context["counts"][round_.pk], context={"red_team": red_team, "uncertainty": uncertainty}
        ).data


class ContextSerializer(serializers.ModelSerializer):
    """A context to write an example on: its id (send it back as ``context``), round, data and tag."""

    round = serializers.IntegerField(source="round.number", read_only=True)
    data = serializers.JSONField(read_only=True, help_text="Values of the task's context fields by name.")
    metadata = serializers.JSONField(read_only=True)

    class Meta:
        model = Context
        fields = ["id", "round", "data", "tag", "metadata"]


class ContextQuerySerializer(StrictQuerySerializer):
    """Query parameters of ``contexts/next``: a serving strategy and an optional comma-separated tag list."""

    strategy = serializers.ChoiceField(choices=STRATEGIES, default="least_used", required=False)
    tags = QueryTextField(
        required=False, allow_blank=True, max_length=2000, help_text="Comma-separated tags (any of them)."
    )

    def validate_tags(self, value: str) -> list[str]:
        return [tag.strip() for tag in value.split(",") if tag.strip()]
