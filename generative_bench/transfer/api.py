"""``GET /api/tasks/{slug}/transfer/``: the transfer matrix as JSON (``selectors.transfer_matrix``)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, serializers
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from generative_bench.kinds import benchmarked
from models_registry.serializers import ModelErrorSerializer
from tasks.api import SLUG
from tasks.selectors import task_or_404

from .selectors import transfer_matrix


class TransferCellSerializer(serializers.Serializer):
    rate = serializers.FloatField(allow_null=True, help_text="Failed answers / answers, in [0, 1].")
    interval = serializers.ListField(
        child=serializers.FloatField(), allow_null=True, help_text="95% interval."
    )
    source = serializers.CharField(
        allow_null=True,
        help_text='"people" (across the people who wrote them) or "corrected judge" (Rogan-Gladen).',
    )
    n = serializers.IntegerField(help_text="The answers behind the figure.")
    people = serializers.IntegerField(allow_null=True, help_text="The people who wrote the conversations.")
    note = serializers.CharField(help_text="Why there is no figure (or no interval); '' otherwise.")


class TransferRowSerializer(serializers.Serializer):
    model_id = serializers.IntegerField()
    name = serializers.CharField(help_text="As the leaderboard names it (anonymous models numbered).")
    target_of = serializers.ListField(
        child=serializers.IntegerField(), help_text="Rounds it was the target of."
    )
    cells = TransferCellSerializer(many=True, help_text="One per round, in order.")


class TransferMatrixSerializer(serializers.Serializer):
    task = serializers.CharField()
    rounds = serializers.ListField(child=serializers.IntegerField(), help_text="Round numbers, the columns.")
    judge = serializers.CharField(
        allow_null=True, help_text="The trusted judge standing in where people did not judge."
    )
    rows = TransferRowSerializer(many=True)


class TaskTransfer(APIView):
    """``GET /api/tasks/{slug}/transfer/``: each model's failure rate on each round's conversations."""

    permission_classes = [AllowAny]

    @extend_schema(
        summary="Read a red-teaming task's transfer matrix",
        parameters=[SLUG],
        responses={200: TransferMatrixSerializer, 404: ModelErrorSerializer},
    )
    def get(self, request, slug: str):
        task = task_or_404(slug)
        if not benchmarked(task.cfg):
            raise exceptions.NotFound("This task has no transfer matrix: it is not a red-teaming task.")
        return Response(transfer_matrix(task, request.user).as_dict())
