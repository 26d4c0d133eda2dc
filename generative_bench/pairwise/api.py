"""``GET /api/tasks/{slug}/pairwise-judges/``: the task's pairwise judges and their figures."""

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

from .presenting import pairwise_figures


class PairFiguresSerializer(serializers.Serializer):
    judged_both_orders = serializers.IntegerField(help_text="Battles it voted in both orders.")
    flips = serializers.IntegerField(
        help_text="Of those, battles where its preference followed the position."
    )
    flip_rate = serializers.FloatField(allow_null=True)
    flip_interval = serializers.ListField(
        child=serializers.FloatField(), allow_null=True, help_text="Wilson 95%."
    )
    compared_with_people = serializers.IntegerField(help_text="Battles people voted too.")
    agreeing = serializers.IntegerField()
    agreement = serializers.FloatField(
        allow_null=True, help_text="Its vote (a flip counts as a tie) equals people's."
    )
    agreement_interval = serializers.ListField(child=serializers.FloatField(), allow_null=True)
    models_ranked = serializers.IntegerField()
    rank_correlation = serializers.FloatField(
        allow_null=True,
        help_text="Kendall's tau-b between its Bradley-Terry ranking and people's on the same battles.",
    )


class PairwiseJudgeFiguresSerializer(PairFiguresSerializer):
    """A judge's figures on arena battles (against people's votes), and on replay pairs."""

    id = serializers.IntegerField()
    name = serializers.CharField()
    model = serializers.CharField()
    status = serializers.CharField()
    progress = serializers.CharField()
    replay_pairs = PairFiguresSerializer(
        help_text="The same figures on replay pairs (two models' replayed answers to one conversation), "
        "against people's ratings: the answer people judged good preferred to the one they judged "
        "failed, a tie when they judged both alike."
    )


class TaskPairwiseJudges(APIView):
    """``GET /api/tasks/{slug}/pairwise-judges/``."""

    permission_classes = [AllowAny]

    @extend_schema(
        summary="Read a red-teaming task's pairwise judges: position bias and agreement with people",
        parameters=[SLUG],
        responses={200: PairwiseJudgeFiguresSerializer(many=True), 404: ModelErrorSerializer},
    )
    def get(self, request, slug: str):
        task = task_or_404(slug)
        if not benchmarked(task.cfg):
            raise exceptions.NotFound("This task has no arena: it is not a red-teaming task.")
        return Response(pairwise_figures(task, request.user))
