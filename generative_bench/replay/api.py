"""The replay API (docs/benchmarking.md, "Replay"): thin, every write through ``services``.

* ``POST /api/tasks/{slug}/rounds/{number}/replays/`` (the task's owners): replay the round against a
  generative model of the task, body ``{"model": id, "target_turns": "keep" | "regenerate"}``; 201 with
  the replay, queued (a new one, or one done, failed or cancelled resumed); 409 while it is queued or
  running; 400 for a refused model or round (the body's ``code`` names the rule); 403 for a caller who
  does not own the task;
* ``GET /api/replays/{id}/``: its status and counts;
* ``GET /api/replays/{id}/answers/``: its answers, paginated (``?page``, ``?page_size``).

A replay is seen by its task's owners (and superusers) only: any other caller gets the 404 of an id that
does not exist.
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import exceptions, serializers, status
from rest_framework.generics import ListAPIView
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api.bodies import RejectUnknownFieldsMixin
from core.api.lookups import MAX_ID, positive_int_or_404
from models_registry.models import RegisteredModel
from models_registry.serializers import ModelErrorSerializer
from tasks.models import Round
from tasks.selectors import task_or_404

from ..models import Replay, ReplayAnswer
from . import selectors
from .services import ReplayError, request_replay

ERROR = ModelErrorSerializer
REPLAY_ID = OpenApiParameter("id", OpenApiTypes.INT, OpenApiParameter.PATH, description="The replay's id.")
#: HTTP status of each refusal of ``services.request_replay`` (``ReplayError.code``).
STATUS_OF_CODE = {
    "not_red_team": 400,
    "other_task": 400,
    "not_generative": 400,
    "not_ready": 400,
    "invalid": 400,
    "already_running": 409,
    "not_owner": 403,
}


class Refused(exceptions.APIException):
    """A refusal of the replay services: the status of its code (``STATUS_OF_CODE``), the body
    ``{"detail": message, "code": code}``."""

    def __init__(self, error: ReplayError):
        self.status_code = STATUS_OF_CODE.get(error.code, 400)
        super().__init__(detail=str(error), code=error.code)
        self.detail = {"detail": self.detail, "code": error.code}


class ReplaySerializer(serializers.ModelSerializer):
    """A replay: what it sends to which model, and how far its job got."""

    task = serializers.SlugRelatedField(source="round.task", slug_field="slug", read_only=True)
    round = serializers.IntegerField(source="round.number", read_only=True)
    model = serializers.IntegerField(source="model_id", read_only=True)
    model_name = serializers.CharField(source="model.name", read_only=True)
    reproduction = serializers.SerializerMethodField(
        help_text=(
            "The answers compared byte for byte with the stored ones (the round's own target, keep, greedy "
            "both times): {compared, identical, differing_examples}."
        )
    )

    class Meta:
        model = Replay
        fields = [
            "id", "task", "round", "model", "model_name", "target_turns", "status", "total", "done", "failed",
            "progress", "error", "created_at", "started_at", "finished_at", "reproduction",
        ]  # fmt: skip
        read_only_fields = fields

    @extend_schema_field(
        {
            "type": "object",
            "properties": {
                "compared": {"type": "integer"},
                "identical": {"type": "integer"},
                "differing_examples": {"type": "array", "items": {"type": "integer"}},
            },
        }
    )
    def get_reproduction(self, replay) -> dict:
        return selectors.reproduction_of(replay).as_dict()


class ReplayAnswerSerializer(serializers.ModelSerializer):
    """One stored answer: for a conversation, the messages sent for its last answer, every answer, the
    last answer's generation record (tokens, times, cost, decoding) and the sums; for a multiple-choice
    item, the option picked (its index in the order shown) and whether it is the answer."""

    example = serializers.IntegerField(source="example_id", read_only=True)
    cost = serializers.DecimalField(
        max_digits=14,
        decimal_places=8,
        allow_null=True,
        read_only=True,
        help_text="The answers' cost at the model's prices per million tokens (text, exact); null when unknown.",
    )

    class Meta:
        model = ReplayAnswer
        fields = [
            "example", "status", "messages", "answer", "answers", "generation", "tokens", "cost", "seconds",
            "first_token_seconds", "picked", "correct", "error", "attempts", "updated_at",
        ]  # fmt: skip
        read_only_fields = fields


class ReplayBodySerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    model = serializers.IntegerField(
        min_value=1, max_value=MAX_ID, help_text="A generative model of the task."
    )
    target_turns = serializers.ChoiceField(
        choices=Replay.TargetTurns.choices,
        default=Replay.TargetTurns.KEEP,
        help_text="keep: the round target's earlier answers as they were, the last answer asked; "
        "regenerate: every answer asked, each on the model's own earlier answers.",
    )


def _replay_or_404(request, pk: str) -> Replay:
    replay = (
        selectors.replays_visible_to(request.user).filter(pk=positive_int_or_404(pk, what="replay")).first()
    )
    if replay is None:
        raise exceptions.NotFound("No such replay.")
    return replay


class ReplayCreate(APIView):
    """``POST`` replays a round against a model (task owners)."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        summary="Replay a red-teaming round against a generative model (task owners)",
        request=ReplayBodySerializer,
        # A 400 is either a field's problems ({field: [messages]}) or a refusal ({"detail", "code"}).
        responses={201: ReplaySerializer, 400: OpenApiTypes.OBJECT, 403: ERROR, 404: ERROR, 409: ERROR},
    )
    def post(self, request, slug: str, number: str):
        task = task_or_404(slug)
        round_ = Round.objects.filter(task=task, number=positive_int_or_404(number, what="round")).first()
        if round_ is None:
            raise exceptions.NotFound("No such round.")
        if not task.is_owner(request.user):
            raise exceptions.PermissionDenied("Only the task's owners may replay its rounds.")
        body = ReplayBodySerializer(data=request.data)
        body.is_valid(raise_exception=True)
        model = RegisteredModel.objects.filter(pk=body.validated_data["model"], task=task).first()
        if model is None:
            raise serializers.ValidationError({"model": ["No such model of this task."]})
        try:
            replay = request_replay(
                round_=round_,
                model=model,
                target_turns=body.validated_data["target_turns"],
                user=request.user,
            )
        except ReplayError as exc:
            raise Refused(exc) from None
        replay = selectors.replays_visible_to(request.user).get(pk=replay.pk)
        return Response(ReplaySerializer(replay).data, status=status.HTTP_201_CREATED)


class ReplayDetail(APIView):
    """``GET`` one replay."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        summary="Read a replay: status and counts",
        parameters=[REPLAY_ID],
        responses={200: ReplaySerializer, 404: ERROR},
    )
    def get(self, request, pk: str):
        return Response(ReplaySerializer(_replay_or_404(request, pk)).data)


class ReplayAnswerList(ListAPIView):
    """``GET`` a replay's answers, by example id, paginated."""

    permission_classes = [IsAuthenticated]
    serializer_class = ReplayAnswerSerializer
    filter_backends: list = []

    def get_queryset(self):
        return selectors.answers_of(_replay_or_404(self.request, self.kwargs["pk"]))

    @extend_schema(
        summary="List a replay's answers",
        parameters=[REPLAY_ID],
        responses={200: ReplayAnswerSerializer(many=True), 404: ERROR},
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)
