"""API views of tasks, rounds and contexts (docs/api.md). Thin: reads go through ``tasks.selectors`` and
``tasks.round_stats`` (round statistics, as the task page shows them)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api.lookups import positive_int_or_404
from core.api.permissions import IsContributor

from . import selectors
from .filters import RoundFilter, TaskFilter
from .models import Round
from .red_team_stats import red_team_stats
from .round_stats import round_counts, round_counts_for_task
from .serializers import (
    ContextQuerySerializer,
    ContextSerializer,
    RoundSerializer,
    TaskDetailSerializer,
    TaskSerializer,
)
from .uncertainty_stats import uncertainty_stats

SLUG = OpenApiParameter("slug", OpenApiTypes.STR, OpenApiParameter.PATH, description="The task's slug.")
NUMBER = OpenApiParameter(
    "number", OpenApiTypes.INT, OpenApiParameter.PATH, description="Round number (1, 2, ...)."
)


class NotQualifiedError(PermissionDenied):
    """403 for a refusal of the task's qualification rules (``tasks.qualification.NotQualified``): the body
    is ``{"detail": message, "code": code, "url": url}``, ``code`` one of ``qualification.CODES`` and
    ``url`` the page that lifts it (tutorial, quiz) or null."""

    def __init__(self, code: str, message: str, url: str | None = None):
        super().__init__(detail=message, code=code)
        # Set after __init__: DRF would turn a null url into the text "None".
        self.detail = {"detail": self.detail, "code": code, "url": url}


class TaskList(generics.ListAPIView):
    """Active tasks, by name, with their labels, current round and quorum. Public."""

    serializer_class = TaskSerializer
    permission_classes = [AllowAny]
    filterset_class = TaskFilter

    def get_queryset(self):
        return selectors.active_tasks().order_by("name", "pk")


@extend_schema(parameters=[SLUG])
class TaskDetail(generics.RetrieveAPIView):
    """One active task with its instructions and config (fields, labels, rules). Public."""

    serializer_class = TaskDetailSerializer
    permission_classes = [AllowAny]

    def get_object(self):
        return selectors.task_or_404(self.kwargs["slug"])


@extend_schema(parameters=[SLUG])
class RoundList(generics.ListAPIView):
    """A task's rounds, lowest number first, each with its statistics (examples, fooling, MER, vMER...)."""

    serializer_class = RoundSerializer
    permission_classes = [AllowAny]
    filterset_class = RoundFilter

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # schema generation: no request, no task
            return Round.objects.none()
        self.task = selectors.task_or_404(self.kwargs["slug"])
        return selectors.rounds_of(self.task).select_related("task")

    def get_serializer_context(self):
        context = super().get_serializer_context()
        if hasattr(self, "task"):
            context["counts"] = {c.round.pk: c for c in round_counts_for_task(self.task)}
            context["red_team"] = red_team_stats(self.task)
            context["uncertainty"] = uncertainty_stats(self.task)
        return context


@extend_schema(parameters=[SLUG, NUMBER])
class RoundDetail(generics.RetrieveAPIView):
    """One round of a task with its statistics, the same figures as the task page."""

    serializer_class = RoundSerializer
    permission_classes = [AllowAny]

    def get_object(self):
        task = selectors.task_or_404(self.kwargs["slug"])
        number = positive_int_or_404(self.kwargs["number"], what="round")
        round_ = selectors.rounds_of(task).select_related("task").filter(number=number).first()
        if round_ is None:
            raise NotFound("No such round.")
        self.counts = {round_.pk: round_counts(round_)}
        self.red_team = red_team_stats(task, [round_])
        self.uncertainty = uncertainty_stats(task, [round_])
        return round_

    def get_serializer_context(self):
        return {
            **super().get_serializer_context(),
            "counts": getattr(self, "counts", {}),
            "red_team": getattr(self, "red_team", {}),
            "uncertainty": getattr(self, "uncertainty", {}),
        }


class NextContext(APIView):
    """The context the caller should write their next example on, in the task's current round.

    Strategies (docs/domain.md, "Context serving"): ``least_used`` (default; fewest examples written on it,
    random among equals), ``uniform`` (random), ``least_fooled`` (fewest model-fooling examples).
    ``tags`` (comma-separated) serves only contexts with one of those tags. 404 when the task has no
    context fields, no open current round, or no (matching) context. Signed-in, unblocked callers.
    """

    permission_classes = [IsContributor]

    @extend_schema(
        parameters=[SLUG, ContextQuerySerializer],
        responses={200: ContextSerializer},
    )
    def get(self, request, slug: str):
        task = selectors.task_or_404(slug)
        query = ContextQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        round_ = task.current_round
        if not task.cfg.context_fields:
            raise NotFound("This task has no context fields: write examples without a context.")
        if task.open_round is None:
            raise NotFound("This task has no open round; it is not collecting examples.")
        context = selectors.next_context(
            round_=round_, strategy=query.validated_data["strategy"], tags=query.validated_data.get("tags")
        )
        if context is None:
            raise NotFound("No context is available in the current round (for these tags).")
        return Response(ContextSerializer(context).data)
