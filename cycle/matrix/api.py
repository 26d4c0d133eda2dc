"""``GET /api/tasks/{slug}/cycle/``: the cycle matrix of a task (``cycle.matrix.selectors.cycle_matrix``), public.

The body has ``rule`` (how a wrong answer is decided, in words) and two tables, ``rounds`` (a column per
round's test dataset) and ``static`` (a column per static test set), each with ``columns``, ``rows``
(a model, the rounds it was a target of, and a cell per column: ``fooled``, ``n``, ``rate`` and the
Wilson 95% interval ``low``/``high``, all null with ``missing`` saying why) and ``notes`` (adjacent
targets whose intervals overlap on a column). Models and datasets the caller may not see are left out;
an anonymous model is named as the caller is shown it. A red-teaming task has empty tables.
"""

from __future__ import annotations

from dataclasses import asdict

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from models_registry.serializers import ModelErrorSerializer
from tasks.api import SLUG
from tasks.selectors import task_or_404

from .selectors import CycleTable, cycle_matrix


class CycleCellSerializer(serializers.Serializer):
    """A model on a dataset; the figures are null when ``missing`` is not empty."""

    fooled = serializers.IntegerField(allow_null=True, help_text="Items the model gets wrong.")
    n = serializers.IntegerField(allow_null=True, help_text="Items scored.")
    rate = serializers.FloatField(allow_null=True, help_text="fooled / n, in [0, 1].")
    low = serializers.FloatField(allow_null=True, help_text="Lower end of the Wilson 95% interval.")
    high = serializers.FloatField(allow_null=True, help_text="Upper end of the Wilson 95% interval.")
    missing = serializers.CharField(
        allow_blank=True, help_text="Empty, 'not evaluated' or 'not counted' (a score from before the count)."
    )


class CycleColumnSerializer(serializers.Serializer):
    dataset_id = serializers.IntegerField()
    slug = serializers.CharField()
    name = serializers.CharField()
    round = serializers.IntegerField(allow_null=True, help_text="The round number; null for a static set.")


class CycleRowSerializer(serializers.Serializer):
    model_id = serializers.IntegerField()
    name = serializers.CharField(help_text="As the caller is shown it ('Anonymous model N').")
    target_of = serializers.ListField(
        child=serializers.IntegerField(), help_text="Round numbers it was a target of; empty: not a target."
    )
    cells = CycleCellSerializer(many=True, help_text="One per column, in column order.")


class CycleNoteSerializer(serializers.Serializer):
    dataset_id = serializers.IntegerField()
    later = serializers.IntegerField(help_text="The lower row's model id.")
    earlier = serializers.IntegerField(help_text="The row above it.")
    text = serializers.CharField()
    p_value = serializers.FloatField(
        allow_null=True,
        help_text="McNemar's exact two-sided p on the items both answered; null without the items recorded.",
    )
    differs = serializers.BooleanField(allow_null=True, help_text="p < 0.05; null without the test.")
    only_later = serializers.IntegerField(allow_null=True, help_text="Items wrong for the later model alone.")
    only_earlier = serializers.IntegerField(
        allow_null=True, help_text="Items wrong for the earlier model alone."
    )


class CycleTableSerializer(serializers.Serializer):
    title = serializers.CharField()
    columns = CycleColumnSerializer(many=True)
    rows = CycleRowSerializer(many=True)
    notes = CycleNoteSerializer(many=True)


class CycleMatrixSerializer(serializers.Serializer):
    task = serializers.CharField()
    rule = serializers.CharField(help_text="When a model's answer counts as wrong, in words.")
    rounds = CycleTableSerializer()
    static = CycleTableSerializer()


def _table(table: CycleTable) -> dict:
    data = asdict(table)
    data.pop("key")
    data["rows"] = [{**row, "target_of": list(row["target_of"])} for row in data["rows"]]
    return data


class CycleMatrixView(APIView):
    """The task's targets (and other evaluated models) against each round's validated test examples and
    each static set: fooling rate with n and its Wilson 95% interval. Public."""

    permission_classes = [AllowAny]

    @extend_schema(
        summary="Read a task's cycle matrix",
        parameters=[SLUG],
        responses={200: CycleMatrixSerializer, 404: ModelErrorSerializer},
    )
    def get(self, request, slug: str):
        task = task_or_404(slug)
        matrix = cycle_matrix(task, request.user)
        body = {
            "task": matrix.task,
            "rule": matrix.rule,
            "rounds": _table(matrix.rounds),
            "static": _table(matrix.static),
        }
        return Response(CycleMatrixSerializer(body).data)
