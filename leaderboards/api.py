"""The leaderboard, dataset and export API (docs/api.md); the export format is docs/export-format.md.

* ``GET /api/tasks/{slug}/leaderboard/``: the page's table (``selectors.build_leaderboard``) with
  weights given as ``metric_weights=perf:4,throughput:1`` and ``dataset_weights=12:5``; a bad query
  answers 400 with each parameter's messages (the page instead falls back to defaults and says so).
* ``GET /api/datasets/``, ``GET /api/datasets/{id}/``: hidden datasets only for the task's owners
  (404 for anyone else).
* ``GET /api/tasks/{slug}/export/?round=&format=jsonl|csv``: the task's examples, streamed
  (``exports.iter_export``, annotators pseudonymised per round); task owners only (403 otherwise).
"""

from __future__ import annotations

from django.db.models import Count, F
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import generics
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.exports import CONTENT_TYPES, ExportError, export_filename, iter_export
from core.streaming import streaming_response
from leaderboards.kinds import rules_for
from models_registry.serializers import ModelErrorSerializer
from tasks.models import Round, Task
from tasks.selectors import task_or_404

from . import selectors
from .filters import DatasetFilter
from .forms import parse_leaderboard_query
from .generative.board import BoardError, generative_board, params_from
from .serializers import (
    DatasetSerializer,
    ExportQuerySerializer,
    LeaderboardQuerySerializer,
    LeaderboardSerializer,
    without_fallback,
)

ERROR = ModelErrorSerializer
FIELD_ERRORS = OpenApiResponse(
    response={"type": "object", "additionalProperties": {}},
    description="Bad input: `{parameter or field: [messages]}` (nested for list items), or `{detail}`.",
)


def visible_datasets(user):
    """``selectors.datasets_visible_to(user)`` with their task, round and ``n_items``."""
    return (
        selectors.datasets_visible_to(user).select_related("task", "round").annotate(n_items=Count("items"))
    )


class DatasetListView(generics.ListAPIView):
    """``GET /api/datasets/``: the datasets the caller may see, by task, round and name."""

    serializer_class = DatasetSerializer
    filterset_class = DatasetFilter
    permission_classes = [AllowAny]

    def get_queryset(self):
        # Round datasets by round, then static sets (no round), on every database.
        by_round = F("round__number").asc(nulls_last=True)
        return visible_datasets(self.request.user).order_by("task__slug", by_round, "name", "id")

    @extend_schema(summary="List datasets")
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)


class DatasetDetailView(generics.RetrieveAPIView):
    """``GET /api/datasets/{id}/``: one dataset (404 for a hidden one unless the caller owns the task)."""

    serializer_class = DatasetSerializer
    permission_classes = [AllowAny]

    def get_queryset(self):
        return visible_datasets(self.request.user)

    @extend_schema(summary="Read a dataset", responses={200: DatasetSerializer, 404: ERROR})
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)


def leaderboard_params(task: Task, query) -> selectors.LeaderboardParams:
    """The page's ``LeaderboardParams`` from the API's query (``LeaderboardQuerySerializer``).

    The query is rewritten into the page's names (``w_<metric>``, ``d_<id>``) and read by the page's
    parser in stages (round, metric weights, dataset weights, sort), so that each message the parser
    gives is reported under the parameter that caused it.

    Raises:
        ValidationError: 400 with ``{parameter: [messages]}``.
    """
    ids = [d.pk for d in selectors.scoring_datasets(task)]
    form = LeaderboardQuerySerializer(data=query, context={"task": task, "scoring_dataset_ids": ids})
    form.is_valid(raise_exception=True)
    data = form.validated_data
    stages = [
        ("round", {"round": data.get("round", "")}),
        ("metric_weights", {f"w_{k}": v for k, v in (data.get("metric_weights") or {}).items()}),
        ("dataset_weights", {f"d_{k}": v for k, v in (data.get("dataset_weights") or {}).items()}),
        ("sort", {"sort": data.get("sort", ""), "dir": data.get("dir", "")}),
    ]
    page_query: dict[str, str] = {}
    errors: dict[str, list[str]] = {}
    seen = 0
    params = None
    for name, part in stages:
        page_query.update(part)
        params, _ = parse_leaderboard_query(
            page_query, task=task, default_metric_weights=selectors.default_metric_weights(task)
        )
        # The parser reads round, metric weights, dataset weights, then sort, appending its messages
        # in that order, so the new messages of this stage are this parameter's.
        if len(params.messages) > seen:
            errors[name] = [without_fallback(m) for m in params.messages[seen:]]
            seen = len(params.messages)
    if errors:
        raise ValidationError(errors)
    return params


class LeaderboardView(APIView):
    """``GET /api/tasks/{slug}/leaderboard/``: the task's leaderboard with the weights asked for."""

    permission_classes = [AllowAny]

    @extend_schema(
        summary="Read a task's leaderboard",
        description=(
            "The same table as the leaderboard page: a row per ready model the caller may see, with "
            "its per-metric values (weighted over the scoring datasets), per-dataset perf, Dynascore "
            "(Ma et al. 2021), rank and completeness; the AMRS of each metric and the metrics left out "
            "of the Dynascore. Metrics and datasets not named in the weights keep their defaults."
        ),
        parameters=[
            LeaderboardQuerySerializer,
            OpenApiParameter(
                "metric_weights",
                str,
                description=LeaderboardQuerySerializer().fields["metric_weights"].help_text,
                examples=[
                    OpenApiExample(
                        "Perf and throughput only",
                        value="perf:1,throughput:1,memory:0,fairness:0,robustness:0",
                    ),
                    OpenApiExample(
                        "The default weights", value="perf:4,throughput:1,memory:1,fairness:1,robustness:1"
                    ),
                ],
            ),
        ],
        responses={200: LeaderboardSerializer, 400: FIELD_ERRORS, 404: ERROR},
    )
    def get(self, request, slug: str):
        task = task_or_404(slug)
        params = leaderboard_params(task, request.query_params)
        table = selectors.build_leaderboard(task, request.user, params)
        table.pop("fork", None)
        return Response(table)


class ExportView(APIView):
    """``GET /api/tasks/{slug}/export/``: the task's (or one round's) examples, streamed; owners only."""

    permission_classes = [IsAuthenticated]

    def perform_content_negotiation(self, request, force=False):
        # ``format`` is this endpoint's own parameter (jsonl or csv), not DRF's renderer override;
        # errors are JSON and the export itself is a StreamingHttpResponse that skips rendering.
        renderer = JSONRenderer()
        return renderer, renderer.media_type

    @extend_schema(
        summary="Export a task's examples",
        description=(
            "JSONL (one record per line) or CSV, format 1.0 (`docs/export-format.md`), streamed. "
            "Annotator and validator ids are pseudonyms, stable within a round. The task's owners only."
        ),
        parameters=[ExportQuerySerializer],
        responses={
            (200, "application/x-ndjson"): OpenApiTypes.STR,
            (200, "text/csv"): OpenApiTypes.STR,
            (400, "application/json"): FIELD_ERRORS,
            (401, "application/json"): ERROR,
            (403, "application/json"): ERROR,
            (404, "application/json"): ERROR,
        },
    )
    def get(self, request, slug: str):
        task = task_or_404(slug)
        if not task.is_owner(request.user):
            raise PermissionDenied("Only the task's owners may export its examples.")
        form = ExportQuerySerializer(data=request.query_params)
        form.is_valid(raise_exception=True)
        fmt = form.validated_data["format"]
        rounds = None
        if "round" in form.validated_data:
            number = form.validated_data["round"]
            round_ = Round.objects.filter(task=task, number=number).first()
            if round_ is None:
                raise ValidationError({"round": [f"{task.slug} has no round {number}."]})
            rounds = [round_]
        try:
            pieces = iter_export(task, rounds, fmt=fmt)
        except ExportError as exc:
            raise ValidationError({"format": [str(exc)]}) from None
        response = streaming_response(request, pieces, content_type=CONTENT_TYPES[fmt])
        response["Content-Disposition"] = f'attachment; filename="{export_filename(task, rounds, fmt)}"'
        return response


class GenerativeLeaderboardView(APIView):
    """``GET /api/tasks/{slug}/leaderboard/generative/``: the generative leaderboard of a red-teaming task."""

    permission_classes = [AllowAny]

    @extend_schema(
        summary="Read a red-teaming task's generative leaderboard",
        description=(
            "A row per ready generative model the caller may see: multiple-choice accuracy per round, "
            "attack success rate by people and by each judge (a judge below its agreement floor is marked "
            "untrusted and weighs 0), Bradley-Terry score from the arena with its bootstrap 95% interval, "
            "tokens per second, seconds to the first token, memory, cost per thousand prompts, and the "
            "Dynascore over them. Weights: w_<metric> and r_<round number>, each in [0, 100]. 404 for a "
            "task that is not a red-teaming task (docs/benchmarking.md)."
        ),
        parameters=[
            OpenApiParameter("w_perf", float, description="Weight of a metric (any metric name after w_)."),
            OpenApiParameter("r_1", float, description="Weight of a round (any round number after r_)."),
        ],
        responses={200: OpenApiTypes.OBJECT, 400: OpenApiTypes.OBJECT, 404: OpenApiTypes.OBJECT},
    )
    def get(self, request, slug: str):
        task = task_or_404(slug)
        if not rules_for(task.cfg).generative:
            raise NotFound("Not a red-teaming task.")
        try:
            params = params_from(request.query_params)
        except BoardError as exc:
            raise ValidationError({"weights": [str(exc)]}) from None
        return Response(generative_board(task, request.user, params))
