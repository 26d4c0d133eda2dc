"""``GET /api/tasks/{slug}/annotators/?round=N``: the annotator leaderboard (``leaderboards.annotators.board``),
public and paginated (``?page=``, ``?page_size=``). Besides ``count``, ``next``, ``previous`` and
``results``, the body names the board: ``round`` (null for every round), ``title``, ``is_final_table``
(a competition round, ranked by vMER) and ``quota`` (its examples per participant, else null).
A ``round`` that is not a whole number, or not a round of the task, is a 400 naming the parameter."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.generics import GenericAPIView
from rest_framework.permissions import AllowAny
from rest_framework.response import Response

from core.api.queries import QueryIntegerField, StrictQuerySerializer
from tasks.api import SLUG
from tasks.models import Round
from tasks.selectors import task_or_404

from .board import annotator_board


class AnnotatorQuerySerializer(StrictQuerySerializer):
    """``?round=N`` (default: every round of the task)."""

    round = QueryIntegerField(required=False, min_value=1, max_value=2**31 - 1)


class AnnotatorStandingSerializer(serializers.Serializer):
    """One annotator: ``name`` a per-task pseudonym (``anon-`` + 16 hex digits) unless they opted in to
    their display name (``is_pseudonym`` false); counts over their collected examples (not retracted, not
    imported); ``vmer`` = verified / scored (null when none scored)."""

    rank = serializers.IntegerField()
    name = serializers.CharField()
    is_pseudonym = serializers.BooleanField()
    collected = serializers.IntegerField()
    scored = serializers.IntegerField(help_text="Collected examples with a known model verdict.")
    verified = serializers.IntegerField(help_text="Verified model-fooling: fooling and validated correct.")
    vmer = serializers.FloatField(allow_null=True)
    rejected = serializers.IntegerField(help_text="Settled validated incorrect.")
    flagged = serializers.IntegerField(help_text="Settled flagged, or flagged by their author.")


class AnnotatorLeaderboardSerializer(serializers.Serializer):
    """A page of the board and what board it is."""

    count = serializers.IntegerField()
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = AnnotatorStandingSerializer(many=True)
    round = serializers.IntegerField(allow_null=True, help_text="The round, or null for every round.")
    title = serializers.CharField()
    is_final_table = serializers.BooleanField(help_text="A competition round's final table, ranked by vMER.")
    quota = serializers.IntegerField(allow_null=True, help_text="Examples per participant in a competition.")


class AnnotatorLeaderboard(GenericAPIView):
    """The annotators of a task (or of one round) ranked by verified model-fooling examples, then vMER;
    a competition round's final table by vMER, then verified model-fooling. Public."""

    permission_classes = [AllowAny]
    serializer_class = AnnotatorStandingSerializer

    @extend_schema(
        parameters=[SLUG, AnnotatorQuerySerializer], responses={200: AnnotatorLeaderboardSerializer}
    )
    def get(self, request, slug: str):
        task = task_or_404(slug)
        query = AnnotatorQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        round_ = None
        if "round" in query.validated_data:
            number = query.validated_data["round"]
            round_ = Round.objects.filter(task=task, number=number).first()
            if round_ is None:
                raise ValidationError({"round": [f"{task.slug} has no round {number}."]})
        board = annotator_board(task, round_)
        page = self.paginate_queryset(board.rows)
        response = self.get_paginated_response(AnnotatorStandingSerializer(page, many=True).data)
        response.data.update(
            {
                "round": round_.number if round_ else None,
                "title": board.title,
                "is_final_table": board.is_final_table,
                "quota": board.quota,
            }
        )
        return Response(response.data)
