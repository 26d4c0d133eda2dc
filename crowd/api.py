"""The study API for task owners (docs/crowd.md, "Study API"): ``/api/studies/`` list and create,
``/api/studies/<id>/`` read and update (PUT, PATCH). Thin over ``crowd.selectors.studies_owned_by``.

Signed-in callers only (401 otherwise). Everyone sees only the studies of the tasks they own (a study of
another task answers 404); creating one on a task the caller does not own is a 403.
"""

from __future__ import annotations

import uuid

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import generics
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.permissions import IsAuthenticated

from . import selectors, services
from .serializers import StudySerializer


@extend_schema_view(
    get=extend_schema(summary="List your studies"), post=extend_schema(summary="Create a study")
)
class StudyList(generics.ListCreateAPIView):
    """The studies of the caller's tasks, newest first; ``POST`` creates one on a round of a task they own."""

    serializer_class = StudySerializer
    permission_classes = [IsAuthenticated]

    def get_queryset(self):
        return selectors.studies_owned_by(self.request.user).order_by("-created_at", "-id")

    def perform_create(self, serializer):
        round_ = serializer.validated_data["round"]
        if not round_.task.is_owner(self.request.user):
            raise PermissionDenied("Only the task's owners can create studies on it.")
        serializer.validated_data.pop("_rotate", None)
        serializer.save()


@extend_schema_view(
    get=extend_schema(summary="Read a study"),
    put=extend_schema(summary="Replace a study's settings"),
    patch=extend_schema(summary="Change a study's settings"),
)
class StudyDetail(generics.RetrieveUpdateAPIView):
    """One study of the caller's tasks, by its public id (404 for any other)."""

    serializer_class = StudySerializer
    permission_classes = [IsAuthenticated]

    def get_object(self):
        try:
            public_id = uuid.UUID(str(self.kwargs["public_id"]))
        except ValueError:
            raise NotFound("No such study.") from None
        study = selectors.studies_owned_by(self.request.user).filter(public_id=public_id).first()
        if study is None:
            raise NotFound("No such study.")
        return study

    def perform_update(self, serializer):
        rotate = serializer.validated_data.pop("_rotate", False)
        study = serializer.save()
        if rotate:
            services.rotate_entry_key(study=study)
