"""The annotation-assistant study through the API (docs/api.md; docs/domain.md, "Annotation
assistants"): the caller's arm, a suggestion, and a round's figures per arm for its task's owners."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api.bodies import RejectUnknownFieldsMixin, StrictIntegerField
from core.api.lookups import MAX_ID, positive_int_or_404
from core.api.permissions import IsContributor
from tasks import selectors as task_selectors
from tasks.api import SLUG, NotQualifiedError
from tasks.models import Round
from tasks.selectors import task_or_404

from .. import services as annotation_services
from ..throttling import SuggestionThrottle
from . import selectors, services


class SuggestionBody(RejectUnknownFieldsMixin, serializers.Serializer):
    """The body of ``POST /api/tasks/{slug}/suggestions/``."""

    context = StrictIntegerField(min_value=1, max_value=MAX_ID, required=False, allow_null=True)
    label = serializers.CharField(required=False, default="", allow_blank=True, max_length=100)


class ArmOfCaller(APIView):
    """The caller's arm in the task's current round (assigned now if they have none): ``{"arm": name or
    null, "assistant": bool}``; null without a study or an open round."""

    permission_classes = [IsContributor]

    @extend_schema(parameters=[SLUG], responses={200: dict})
    def get(self, request, slug: str):
        task = task_or_404(slug)
        arm = services.arm_for(task, request.user) if task.open_round is not None else None
        return Response({"arm": arm.name if arm else None, "assistant": bool(arm and arm.has_assistant)})


class SuggestionCreate(APIView):
    """Ask the caller's arm's assistant for a candidate example on ``context`` (for ``label``, optional):
    201 ``{"id", "text", "arm", "seconds"}``. Send the id as ``suggestion`` with the example that takes
    it. 400 for a bad label or context or an arm without an assistant, 403 for a writer the task's rules
    refuse, 409 when no round is open, 429 over ``DYNABENCH_SUGGESTION_RATE`` or while the caller's last
    ask is still being answered, 503 when the assistant is not available or did not answer."""

    permission_classes = [IsContributor]
    throttle_classes = [SuggestionThrottle]

    @extend_schema(parameters=[SLUG], request=SuggestionBody, responses={201: dict})
    def post(self, request, slug: str):
        task = task_or_404(slug)
        body = SuggestionBody(data=request.data)
        body.is_valid(raise_exception=True)
        if task.open_round is None:
            conflict = exceptions.APIException("This task is not collecting examples right now.")
            conflict.status_code = status.HTTP_409_CONFLICT
            raise conflict
        context = None
        if body.validated_data.get("context") is not None:
            context = task_selectors.context_of_round(task.current_round, body.validated_data["context"])
            if context is None:
                raise exceptions.ValidationError(
                    {"context": ["This context is not part of the current round."]}
                )
        try:
            suggestion = services.suggest(
                task=task, worker=request.user, context=context, label=body.validated_data["label"]
            )
        except annotation_services.NotQualifiedToWrite as exc:
            raise NotQualifiedError(exc.code, exc.message, exc.url) from None
        except annotation_services.ExampleError as exc:
            raise exceptions.PermissionDenied(" ".join(m for ms in exc.errors.values() for m in ms)) from None
        except services.AssistantError as exc:
            if exc.code in ("unavailable", "failed"):
                unavailable = exceptions.APIException(exc.message)
                unavailable.status_code = status.HTTP_503_SERVICE_UNAVAILABLE
                raise unavailable from None
            if exc.code == "busy":
                busy = exceptions.APIException(exc.message)
                busy.status_code = status.HTTP_429_TOO_MANY_REQUESTS
                raise busy from None
            raise exceptions.ValidationError({"non_field_errors": [exc.message]}) from None
        return Response(
            {
                "id": suggestion.pk,
                "text": suggestion.text,
                "arm": suggestion.arm,
                "seconds": suggestion.seconds,
            },
            status=status.HTTP_201_CREATED,
        )


class RoundArms(APIView):
    """A round's figures per arm of its assistant study (``selectors.arm_stats_as_json``): examples per
    hour, MER, validated MER, validated examples per hour and the share of suggestions kept, each with its
    95% interval across the arm's people and, against the first arm, the difference and its permutation
    p-value. Task owners only."""

    permission_classes = [IsAuthenticated]

    @extend_schema(parameters=[SLUG], responses={200: dict})
    def get(self, request, slug: str, number):
        task = task_or_404(slug)
        if not task.is_owner(request.user):
            raise exceptions.PermissionDenied("Only the task's owners may see its assistant study.")
        number = positive_int_or_404(number, what="round")
        round_ = Round.objects.select_related("task").filter(task=task, number=number).first()
        if round_ is None:
            raise exceptions.NotFound("No such round.")
        return Response({"round": number, "arms": selectors.arm_stats_as_json(selectors.arm_stats(round_))})
