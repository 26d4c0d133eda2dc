"""API for a task's owners: the workers of the task (block and allow lists, holds for review, onboarding;
docs/crowd.md, "Qualification"). Thin: writes go through ``tasks.qualification``.

``GET /api/tasks/<slug>/workers/``: every worker with a standing on the task (a ``TaskWorker`` row).
``GET``, ``PUT`` and ``PATCH /api/tasks/<slug>/workers/<username>/``: one worker's standing; PUT sets
``listing`` and ``held`` (both required), PATCH any of them. 401 anonymous, 403 signed-in non-owners,
404 an unknown task or user.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import transaction
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, serializers
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from core.text_rules import check_free_text, normalise_newlines

from . import qualification, selectors
from .api import SLUG
from .models import Task, TaskWorker

USERNAME = OpenApiParameter(
    "username", OpenApiTypes.STR, OpenApiParameter.PATH, description="The worker's username."
)
MAX_REASON_LENGTH = 2000


class TaskWorkerSerializer(serializers.ModelSerializer):
    """One worker's standing on a task."""

    username = serializers.CharField(source="user.username", read_only=True)
    held = serializers.SerializerMethodField(help_text="True while held for review.")

    class Meta:
        model = TaskWorker
        fields = [
            "username",
            "listing",
            "listing_reason",
            "held",
            "held_at",
            "held_reason",
            "tutorial_seen_at",
            "quiz_passed_at",
            "updated_at",
        ]
        read_only_fields = fields

    def get_held(self, worker: TaskWorker) -> bool:
        return worker.held_at is not None


def _reason(value: str, label: str) -> str:
    value = normalise_newlines(value or "")
    problem = check_free_text(value, label, MAX_REASON_LENGTH)
    if problem:
        raise serializers.ValidationError(problem)
    return value


class TaskWorkerUpdateSerializer(serializers.Serializer):
    """What an owner sets: ``listing`` ("" none, "allowed", "blocked") with an optional ``listing_reason``;
    ``held`` (true holds for review with ``held_reason``, false releases the hold)."""

    listing = serializers.ChoiceField(choices=TaskWorker.Listing.choices)
    listing_reason = serializers.CharField(
        required=False, allow_blank=True, trim_whitespace=False, default=""
    )
    held = serializers.BooleanField()
    held_reason = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False, default="")

    def validate_listing_reason(self, value: str) -> str:
        return _reason(value, "The listing reason")

    def validate_held_reason(self, value: str) -> str:
        return _reason(value, "The reason for the hold")


def owned_task_or_403(request, slug: str) -> Task:
    """The active task ``slug`` (404) if the caller owns it (a task owner or a superuser); else 403."""
    task = selectors.task_or_404(slug)
    if not task.is_owner(request.user):
        raise PermissionDenied("Only the task's owners may see and change its workers.")
    return task


@extend_schema(parameters=[SLUG])
class TaskWorkerList(generics.ListAPIView):
    """The task's workers with a standing (listed, held or onboarded), by username. Task owners only."""

    serializer_class = TaskWorkerSerializer
    permission_classes = [IsAuthenticated]

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return TaskWorker.objects.none()
        task = owned_task_or_403(self.request, self.kwargs["slug"])
        return task.workers.select_related("user").order_by("user__username", "pk")


@extend_schema(parameters=[SLUG, USERNAME])
class TaskWorkerDetail(APIView):
    """One worker's standing on the task; PUT (``listing`` and ``held`` required) or PATCH (any of
    ``listing``, ``listing_reason``, ``held``, ``held_reason``) changes it. Task owners only; 400 with
    field messages for bad values; 404 for an unknown username."""

    permission_classes = [IsAuthenticated]

    def _target(self, request, slug: str, username: str):
        task = owned_task_or_403(request, slug)
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise NotFound("No such user.")
        return task, user

    @extend_schema(responses={200: TaskWorkerSerializer})
    def get(self, request, slug: str, username: str):
        task, user = self._target(request, slug, username)
        worker = task.workers.filter(user=user).first() or TaskWorker(task=task, user=user)
        return Response(TaskWorkerSerializer(worker).data)

    @extend_schema(request=TaskWorkerUpdateSerializer, responses={200: TaskWorkerSerializer})
    def put(self, request, slug: str, username: str):
        return self._update(request, slug, username, partial=False)

    @extend_schema(request=TaskWorkerUpdateSerializer, responses={200: TaskWorkerSerializer})
    def patch(self, request, slug: str, username: str):
        return self._update(request, slug, username, partial=True)

    def _update(self, request, slug: str, username: str, *, partial: bool) -> Response:
        task, user = self._target(request, slug, username)
        body = TaskWorkerUpdateSerializer(data=request.data, partial=partial)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        with transaction.atomic():
            worker = qualification.standing_of(task, user)
            if "listing" in data:
                reason = data.get("listing_reason", worker.listing_reason if partial else "")
                qualification.set_listing(task=task, user=user, listing=data["listing"], reason=reason)
            elif "listing_reason" in data and worker.listing:
                qualification.set_listing(
                    task=task, user=user, listing=worker.listing, reason=data["listing_reason"]
                )
            if data.get("held") is True:
                qualification.hold_for_review(
                    task=task,
                    user=user,
                    reason=data.get("held_reason") or f"Held by {request.user.username}.",
                )
            elif data.get("held") is False:
                qualification.release_hold(task=task, user=user)
        worker = task.workers.select_related("user").get(user=user)
        return Response(TaskWorkerSerializer(worker).data)
