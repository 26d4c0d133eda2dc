"""Serializers of the leaderboard, dataset and export API (``leaderboards.api``).

The leaderboard's response is ``selectors.build_leaderboard``'s dict (what the page renders), described
here for the OpenAPI schema; its query (``metric_weights=perf:4,throughput:1``,
``dataset_weights=12:5,13:1``) is turned into the page's query string and read by the page's parser
(``forms.parse_leaderboard_query``), so the API and the page compute the same table.
"""

from __future__ import annotations

import re

from rest_framework import serializers

from annotation.exports import FORMATS
from core.api.queries import QueryIntegerField
from tasks.models import Task

from .forms import MAX_WEIGHT
from .models import Dataset
from .selectors import leaderboard_metrics

#: At most this many ``name:weight`` pairs in one weights parameter (the query string stays small).
MAX_WEIGHT_PAIRS = 100


class DatasetSerializer(serializers.ModelSerializer):
    """A dataset's description: what it is, where it came from, how many items it has."""

    task = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    round = serializers.IntegerField(
        source="round.number",
        read_only=True,
        allow_null=True,
        help_text="Round number; null for static sets.",
    )
    n_items = serializers.IntegerField(read_only=True, help_text="Number of labelled items.")

    class Meta:
        model = Dataset
        fields = [
            "id",
            "slug",
            "name",
            "task",
            "kind",
            "access",
            "round",
            "split",
            "description",
            "licence",
            "source",
            "n_items",
            "created_at",
        ]
        read_only_fields = fields


def parse_weights(raw: str, *, what: str, known: list[str]) -> dict[str, str]:
    """Split ``"a:4,b:1"`` into ``{"a": "4", "b": "1"}``, checking names and syntax, not the numbers.

    The numbers are checked by the page's parser afterwards (same messages as the page).

    Raises:
        serializers.ValidationError: a pair without ``:``, an empty or unknown name, a name twice, or
            more than ``MAX_WEIGHT_PAIRS`` pairs; the messages name each problem.
    """
    pairs = [p.strip() for p in raw.split(",") if p.strip()]
    if len(pairs) > MAX_WEIGHT_PAIRS:
        raise serializers.ValidationError(f"At most {MAX_WEIGHT_PAIRS} {what} weights.")
    weights: dict[str, str] = {}
    errors: list[str] = []
    for pair in pairs:
        name, sep, value = pair.partition(":")
        name, value = name.strip(), value.strip()
        if not sep or not name or not value:
            errors.append(f"{pair[:40]!r} is not NAME:WEIGHT (e.g. {known[0] if known else 'perf'}:4).")
        elif name not in known:
            listed = ", ".join(known) if known else "none"
            errors.append(f"Unknown {what} {name[:40]!r}; the choices are: {listed}.")
        elif name in weights:
            errors.append(f"{what.capitalize()} {name[:40]!r} is given twice.")
        else:
            weights[name] = value
    if errors:
        raise serializers.ValidationError(errors)
    return weights


class LeaderboardQuerySerializer(serializers.Serializer):
    """``?round=&metric_weights=&dataset_weights=&sort=&dir=`` of ``GET /api/tasks/{slug}/leaderboard/``.

    ``context["task"]`` is the task. Metrics and datasets not named keep their defaults (the task's
    default metric weights, weight 1 for a dataset), as on the page; give 0 to leave one out.
    """

    round = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=20,
        help_text="A round number with a scoring dataset, or `all` (default): which datasets are ranked.",
    )
    metric_weights = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=2000,
        help_text="Comma-separated METRIC:WEIGHT, e.g. `perf:4,throughput:1,memory:1,fairness:1,robustness:1`; "
        f"weights from 0 to {MAX_WEIGHT:,}.",
    )
    dataset_weights = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=2000,
        help_text="Comma-separated DATASET_ID:WEIGHT of scoring datasets, e.g. `12:5,13:1`.",
    )
    sort = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=60,
        help_text="`dynascore` (default), `model`, a metric name or `d<dataset id>`.",
    )
    dir = serializers.ChoiceField(choices=["asc", "desc"], required=False, help_text="Sort direction.")

    def validate_metric_weights(self, raw: str) -> dict[str, str]:
        task: Task = self.context["task"]
        return parse_weights(raw or "", what="metric", known=leaderboard_metrics(task))

    def validate_dataset_weights(self, raw: str) -> dict[str, str]:
        known = [str(pk) for pk in self.context["scoring_dataset_ids"]]
        return parse_weights(raw or "", what="dataset", known=known)


_DEFAULT_TAIL = re.compile(r";[^;]*\.$")


def without_fallback(message: str) -> str:
    """A page message minus its "; the default is used." tail: the API refuses instead of falling back."""
    return _DEFAULT_TAIL.sub(".", message)


class MetricSerializer(serializers.Serializer):
    name = serializers.CharField()
    label = serializers.CharField()


class LeaderboardDatasetSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    round = serializers.IntegerField(allow_null=True)
    weight = serializers.FloatField(help_text="As given (or the default).")
    normalised = serializers.FloatField(help_text="w̃_d: the weight divided by the sum of weights.")


class LeaderboardRowSerializer(serializers.Serializer):
    model_id = serializers.IntegerField()
    name = serializers.CharField(help_text='The model\'s name, or "Anonymous model N".')
    anonymous = serializers.BooleanField()
    masked = serializers.BooleanField(help_text="True when the name shown is not the model's own.")
    published = serializers.BooleanField()
    url = serializers.CharField(help_text="The model's page.")
    dynascore = serializers.FloatField(
        allow_null=True, help_text="Null when a metric that counts is missing."
    )
    rank = serializers.IntegerField(allow_null=True)
    complete = serializers.BooleanField(help_text="False when a score is missing on a weighted dataset.")
    missing = serializers.ListField(child=serializers.CharField(), help_text="Datasets with a missing score.")
    metrics = serializers.DictField(
        child=serializers.FloatField(allow_null=True),
        help_text="x_mj per metric in its unit (throughput examples/s, memory GiB), weighted over datasets.",
    )
    x = serializers.DictField(
        child=serializers.FloatField(allow_null=True), help_text="x'_mj: higher is better (memory: M - x)."
    )
    datasets = serializers.DictField(
        child=serializers.FloatField(allow_null=True), help_text="Perf per dataset id."
    )
    statuses = serializers.DictField(child=serializers.CharField(), help_text="Score status per dataset id.")
    flags = serializers.DictField(
        child=serializers.ListField(child=serializers.ChoiceField(choices=["target", "trained"])),
        help_text="Per round dataset id built against this model (Phang et al. 2022): 'target' (the model was "
        "a target of that round), 'trained' (it was trained on that round's examples). Absent: not flagged.",
    )
    rank_without_flagged = serializers.IntegerField(
        allow_null=True,
        help_text="The model's rank when every model is ranked on the scoring datasets this model is not "
        "flagged on (its rank, for a model with no flag); null when no dataset is left.",
    )


class RoundOrderAgreementSerializer(serializers.Serializer):
    rounds = serializers.ListField(child=serializers.IntegerField(), help_text="The two round numbers.")
    tau = serializers.FloatField(
        allow_null=True, help_text="Kendall's tau-b of the models' perf orders; null when undefined."
    )
    n = serializers.IntegerField(help_text="Models scored on both rounds.")


class LeaderboardSerializer(serializers.Serializer):
    """The leaderboard table (``selectors.build_leaderboard``)."""

    task = serializers.CharField()
    task_name = serializers.CharField()
    round = serializers.IntegerField(allow_null=True, help_text="Null: every round's scoring datasets.")
    perf_metric = serializers.CharField()
    memory_ceiling = serializers.FloatField(help_text="M in GiB.")
    metrics = MetricSerializer(many=True)
    metric_weights = serializers.DictField(child=serializers.FloatField(), help_text="ω_j as used.")
    normalised_metric_weights = serializers.DictField(child=serializers.FloatField(), help_text="ω̃_j.")
    datasets = LeaderboardDatasetSerializer(many=True)
    amrs = serializers.DictField(
        child=serializers.FloatField(allow_null=True),
        help_text="AMRS_j per metric (the reference metric: 1); null: undefined.",
    )
    reference = serializers.CharField(
        default="perf",
        help_text=(
            "The metric the AMRS are measured against: perf, unless it cannot serve (no model has it, or it "
            "weighs 0 and a weighted metric cannot be measured against it); then the weighted metric with "
            "the largest weight."
        ),
    )
    left_out = serializers.DictField(
        child=serializers.CharField(), help_text="Metrics left out of the Dynascore, with the reason."
    )
    pairs_used = serializers.DictField(
        child=serializers.IntegerField(), help_text="Neighbour pairs per AMRS."
    )
    sort = serializers.CharField()
    dir = serializers.CharField()
    error = serializers.CharField(help_text="Why there are no figures (no scoring dataset), else empty.")
    flagged = serializers.BooleanField(help_text="Whether any cell is built against its row's model.")
    kendall_tau = RoundOrderAgreementSerializer(
        many=True, help_text="Per pair of rounds, how far their model orders agree (Kendall 1938)."
    )
    rows = LeaderboardRowSerializer(many=True)


class ExportQuerySerializer(serializers.Serializer):
    """``?round=&format=`` of ``GET /api/tasks/{slug}/export/``."""

    round = QueryIntegerField(
        required=False, min_value=1, max_value=2**31 - 1, help_text="One round's examples (default: all)."
    )
    format = serializers.ChoiceField(choices=list(FORMATS), default="jsonl")
