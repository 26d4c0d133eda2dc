"""API of gold items, task owners only (401 signed out, 403 for anyone else; docs/crowd.md, "Gold items"):

* ``GET /api/tasks/{slug}/gold/``: the task's gold items (retired ones too), paginated;
* ``POST /api/tasks/{slug}/gold/`` ``{"example": id, "verdict": "correct"|"incorrect"|"flagged",
  "note": ""}``: mark an example of the task as gold (400 with field messages; 409 if already gold);
* ``DELETE /api/tasks/{slug}/gold/{id}/``: stop serving it (deleted if unanswered, else retired), 204;
* ``GET /api/tasks/{slug}/gold/accuracy/``: gold accuracy per validator, with whether they are held.

Thin: ``validation.gold.services`` and ``validation.gold.selectors``.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import exceptions, generics, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import selectors as annotation_selectors
from core.api.lookups import positive_int_or_404
from tasks.api import SLUG
from tasks.models import Task
from tasks.selectors import task_or_404

from ..models import GoldItem
from . import selectors as gold_selectors
from . import services as gold
from .serializers import GoldAccuracySerializer, GoldItemCreateSerializer, GoldItemSerializer

GOLD_ID = OpenApiParameter("pk", int, OpenApiParameter.PATH, description="The gold item's id.")


def owned_task_or_403(request, slug: str, what: str = "its gold items") -> Task:
    """The active task ``slug`` (404 if none) when the caller owns it, else 403 saying only the owners
    may see and change ``what``."""
    task = task_or_404(slug)
    if not task.is_owner(request.user):
        raise exceptions.PermissionDenied(f"Only the task's owners may see and change {what}.")
    return task


def _gold_error(exc: gold.GoldError) -> exceptions.APIException:
    if exc.code == "not_owner":
        return exceptions.PermissionDenied(" ".join(exc.errors.get("__all__", [str(exc)])))
    errors = {("non_field_errors" if k == "__all__" else k): v for k, v in exc.errors.items()}
    if exc.code == "exists":
        conflict = exceptions.APIException(errors)
        conflict.status_code = status.HTTP_409_CONFLICT
        return conflict
    return exceptions.ValidationError(errors)


@extend_schema(parameters=[SLUG])
class GoldItemList(generics.ListCreateAPIView):
    """The task's gold items, newest first; POST marks an example of the task (any round) as gold."""

    permission_classes = [IsAuthenticated]
    serializer_class = GoldItemSerializer

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return GoldItem.objects.none()
        return gold_selectors.gold_items_of(owned_task_or_403(self.request, self.kwargs["slug"]))

    @extend_schema(request=GoldItemCreateSerializer, responses={201: GoldItemSerializer})
    def post(self, request, slug: str):
        task = owned_task_or_403(request, slug)
        body = GoldItemCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        example = (
            annotation_selectors.examples_of_task(task).filter(pk=body.validated_data["example"]).first()
        )
        if example is None:
            raise exceptions.ValidationError({"example": ["No example of this task has this id."]})
        try:
            item = gold.mark_gold(
                task=task,
                example=example,
                verdict=body.validated_data["verdict"],
                note=body.validated_data["note"],
                by=request.user,
            )
        except gold.GoldError as exc:
            raise _gold_error(exc) from None
        shown = gold_selectors.gold_items_of(task).get(pk=item.pk)
        return Response(GoldItemSerializer(shown).data, status=status.HTTP_201_CREATED)


class GoldItemDetail(APIView):
    """DELETE a gold item of the task: deleted when nobody answered it, else retired (kept for gold
    accuracy, never served again). 204."""

    permission_classes = [IsAuthenticated]

    @extend_schema(parameters=[SLUG, GOLD_ID], responses={204: None})
    def delete(self, request, slug: str, pk):
        task = owned_task_or_403(request, slug)
        pk = positive_int_or_404(pk, what="gold item")
        item = gold_selectors.gold_items_of(task).filter(pk=pk).first()
        if item is None:
            raise exceptions.NotFound("No such gold item.")
        try:
            gold.retire_gold(gold=item, by=request.user)
        except gold.GoldError as exc:
            raise _gold_error(exc) from None
        return Response(status=status.HTTP_204_NO_CONTENT)


class GoldAccuracyList(APIView):
    """Gold accuracy of each validator who answered gold on the task (correct / answered), by username,
    with whether they are held for review there."""

    permission_classes = [IsAuthenticated]

    @extend_schema(parameters=[SLUG], responses={200: GoldAccuracySerializer(many=True)})
    def get(self, request, slug: str):
        task = owned_task_or_403(request, slug)
        return Response(GoldAccuracySerializer(gold_selectors.gold_accuracy_table(task), many=True).data)
