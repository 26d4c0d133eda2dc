"""The red-teaming API (docs/api.md, "Red-teaming"): everything the red-teaming pages do, for external
tools. Thin: every write goes through ``conversations`` and ``choice_items``, the same services as the
pages, so the rules (order, stored once, limits, the context check) are the same.

* ``POST /api/tasks/{slug}/conversations/``: start a conversation (on ``context``);
* ``GET /api/conversations/{id}/``: one of the caller's conversations, with its turns;
* ``POST /api/conversations/{id}/turns/``: send a message; the answer as JSON, or streamed as
  server-sent events with ``Accept: text/event-stream`` (``sse``);
* ``POST /api/conversations/{id}/ratings/``: side by side, rate the first message's answers and choose
  the one to go on with;
* ``POST /api/conversations/{id}/judgement/``: answer the rubric; the conversation becomes an example
  (once: other answers sent later are refused);
* ``POST /api/tasks/{slug}/choice-items/``: write a multiple-choice item, scored by the target.
"""

from __future__ import annotations

import json

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import exceptions, serializers, status
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.models import Conversation, Turn
from annotation.serializers import ExampleSerializer, TextField
from core.api.bodies import RejectUnknownFieldsMixin, StrictIntegerField
from core.api.lookups import positive_int_or_404
from core.api.permissions import IsContributor
from core.api.throttling import ExampleCreateThrottle
from tasks import qualification
from tasks.api import SLUG, NotQualifiedError
from tasks.kinds import conversational
from tasks.selectors import context_of_round, task_or_404

from . import selectors
from .choice_items import write_choice_item
from .conversations import (
    CandidateStreams,
    ConversationError,
    send_turn,
    start_conversation,
    submit_conversation,
    thread,
)
from .side_by_side import rate_answers
from .sse import sse_response, turn_payload
from .throttling import TurnThrottle

CONVERSATION_ID = OpenApiParameter(
    "id", OpenApiTypes.INT, OpenApiParameter.PATH, description="The conversation's id."
)
STREAM = OpenApiParameter(
    "stream",
    OpenApiTypes.STR,
    OpenApiParameter.QUERY,
    enum=["1"],
    required=False,
    description="1: stream the answer as server-sent events, as Accept: text/event-stream does.",
)
STREAMED_OR_RESENT = (
    "application/json: a message resent with its client_token, the stored turn. text/event-stream (asked "
    "with Accept: text/event-stream or ?stream=1): the answer streamed as server-sent events, turn, "
    "queued, token and done (docs/api.md), status 200 as event streams have it; a resent message's stored "
    "answer comes as one token."
)
#: HTTP status of each refusal of the services (``ConversationError.code``).
STATUS_OF_CODE = {
    "not_found": 404,
    "not_red_team": 404,
    "bad_context": 400,
    "invalid": 400,
    "too_long": 400,
    "blocked": 403,
    "not_open": 409,
    "max_turns": 409,
    "busy": 409,
    "budget": 409,
    "round_closed": 409,
    "no_target": 409,
    "not_ready": 409,
    "model_error": 502,
    "open_conversation": 409,
    "already_judged": 409,
    "stale_judgement": 409,
    "choose_first": 409,
    "too_few_models": 409,
    "not_side_by_side": 409,
    "nothing_to_rate": 409,
    "already_rated": 409,
}


class EventStreamRenderer(BaseRenderer):
    """Lets a client ask for ``text/event-stream``: the streamed answer is a ``StreamingHttpResponse`` of
    its own, and a refusal is JSON whatever was asked (``TurnCreate.handle_exception``), so this renders
    only what reaches it by mistake, as JSON text."""

    media_type = "text/event-stream"
    format = "sse"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return json.dumps(data, ensure_ascii=False).encode()


class Refused(exceptions.APIException):
    """A refusal of the red-teaming services, with the status of its code (``STATUS_OF_CODE``; 409 for a
    code not listed): the body is ``{"detail": message, "code": code}``, so a tool tells a full
    conversation (``max_turns``) from a busy one (``busy``), both 409."""

    def __init__(self, error: ConversationError, fields: dict | None = None):
        self.status_code = STATUS_OF_CODE.get(error.code, 409)
        super().__init__(detail=str(error), code=error.code)
        # Set after __init__, as tasks.api.NotQualifiedError does: the code travels in the body, beside
        # the body's field messages (``fields``, {name: [message]}) when a field decided the refusal.
        self.detail = {"detail": self.detail, "code": error.code, **(fields or {})}


def _run(call):
    """``call()``, its service refusals as API errors (``Refused``, ``NotQualifiedError``)."""
    try:
        return call()
    except ConversationError as exc:
        raise Refused(exc) from None
    except qualification.NotQualified as exc:
        raise NotQualifiedError(exc.code, exc.message, exc.url) from None


class TurnSerializer(serializers.Serializer):
    """A turn as stored (``sse.turn_payload``): the message, the answer, its status and its record."""

    index = serializers.IntegerField()
    prompt = serializers.CharField()
    answer = serializers.CharField(allow_blank=True)
    status = serializers.ChoiceField(choices=Turn.Status.choices)
    finish_reason = serializers.CharField(allow_null=True)
    error = serializers.CharField(allow_blank=True)
    generation = serializers.JSONField(
        help_text="What produced the answer: model, decoding, tokens, first_token_ms, latency_ms, cost..."
    )


class SideAnswerSerializer(TurnSerializer):
    """A side-by-side answer to the first message: a turn with its letter (``answer_of``, "A") and model;
    while the conversation is open, no model and a record of its finish reason only."""

    answer_of = serializers.CharField()
    model = serializers.CharField(
        allow_null=True, help_text="Its model; null until the conversation is judged."
    )


class SideAnswersSerializer(serializers.Serializer):
    answers = SideAnswerSerializer(many=True)


def _anonymous(conversation: Conversation) -> bool:
    """A side-by-side conversation's models stay anonymous to its writer until it is judged."""
    return bool(conversation.side_by_side) and conversation.status != Conversation.Status.SUBMITTED


class ConversationSerializer(serializers.ModelSerializer):
    """One of the caller's conversations with the round's target. Side by side: ``answers`` are the
    first message's answers (``chosen`` the letter gone on with, null before), ``turns`` the one thread
    (the chosen answer first), and ``model`` null until the conversation is judged."""

    round = serializers.IntegerField(source="round.number", read_only=True)
    context = serializers.IntegerField(source="context_id", allow_null=True, read_only=True)
    model = serializers.SerializerMethodField()
    max_turns = serializers.SerializerMethodField()
    example = serializers.IntegerField(source="example_id", allow_null=True, read_only=True)
    side_by_side = serializers.IntegerField(
        read_only=True, help_text="Models answering the first message; 0: one."
    )
    chosen = serializers.SerializerMethodField()
    answers = serializers.SerializerMethodField()
    turns = serializers.SerializerMethodField()

    class Meta:
        model = Conversation
        fields = [
            "id",
            "round",
            "context",
            "model",
            "status",
            "max_turns",
            "example",
            "side_by_side",
            "chosen",
            "answers",
            "turns",
        ]
        read_only_fields = fields

    def _every(self, conversation: Conversation) -> list[Turn]:
        if not hasattr(conversation, "_every_turn"):
            conversation._every_turn = list(conversation.turns.all())
        return conversation._every_turn

    def get_model(self, conversation: Conversation) -> str | None:
        return None if _anonymous(conversation) else conversation.model.name

    def get_max_turns(self, conversation: Conversation) -> int:
        return conversation.round.task.cfg.max_turns

    def get_chosen(self, conversation: Conversation) -> str | None:
        chosen = next((t for t in self._every(conversation) if t.pk == conversation.chosen_turn_id), None)
        return chosen.slot_letter if chosen else None

    @extend_schema_field(SideAnswerSerializer(many=True))
    def get_answers(self, conversation: Conversation) -> list[dict]:
        hidden = _anonymous(conversation)
        return [turn_payload(t, anonymous=hidden) for t in self._every(conversation) if t.slot is not None]

    @extend_schema_field(TurnSerializer(many=True))
    def get_turns(self, conversation: Conversation) -> list[dict]:
        hidden = _anonymous(conversation)
        return [turn_payload(t, anonymous=hidden) for t in thread(conversation, self._every(conversation))]


class StartSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    context = StrictIntegerField(
        required=False,
        allow_null=True,
        min_value=1,
        help_text="A context of the current round (its id, a JSON integer); required where the task has "
        "context fields that are not optional.",
    )


class TurnBodySerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    prompt = TextField(help_text="The message.")
    client_token = serializers.UUIDField(
        required=False, allow_null=True, help_text="Resent with the same token, the stored turn comes back."
    )


class JudgementSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    rubric = serializers.DictField(child=TextField(), help_text="{question name: answer}")
    categories = serializers.ListField(child=TextField(), required=False, default=list)
    answered_turns = StrictIntegerField(
        required=False,
        allow_null=True,
        min_value=0,
        help_text="How many answered turns the judge read; when the conversation has another number "
        "(another client went on with it), the judgement is refused (409 stale_judgement).",
    )


class AnswerRatingSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    # Its range is the service's rule (side_by_side.rate_answers), said with the answer's letter.
    score = StrictIntegerField(help_text="1 (worst) to 100 (best).")
    rubric = serializers.DictField(child=TextField(), help_text="{question name: answer}")
    categories = serializers.ListField(child=TextField(), required=False, default=list)


class RatingsSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    ratings = serializers.DictField(
        child=AnswerRatingSerializer(),
        help_text='{letter: rating}: one per answer that came, by its letter ("A", "B"...).',
    )
    chosen = serializers.CharField(help_text="The letter of the answer to go on with.")


class ChoiceItemSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    context = StrictIntegerField(
        required=False, allow_null=True, min_value=1, help_text="As for a conversation (StartSerializer)."
    )
    question = TextField()
    answer = TextField(help_text="The correct answer.")
    negatives = serializers.ListField(
        child=TextField(),
        help_text="Wrong answers that look right (hard negatives).",
    )
    client_token = serializers.UUIDField(required=False, allow_null=True)


class ChoiceResultSerializer(serializers.Serializer):
    example = serializers.IntegerField()
    options = serializers.ListField(child=serializers.CharField())
    answer = serializers.IntegerField(help_text="The correct option's index in options.")
    picked = serializers.IntegerField(help_text="The option the target picked.")
    model_wrong = serializers.BooleanField()


def _red_team_round(slug: str):
    task = task_or_404(slug)
    if not conversational(task.cfg):
        raise exceptions.NotFound("Not a red-teaming task.")
    if task.open_round is None:
        raise Refused(ConversationError("This task is not collecting examples right now.", "round_closed"))
    return task.current_round


def _body(serializer_class, request) -> dict:
    """The request's body validated by ``serializer_class``. A bad ``context`` (not a JSON integer: "287"
    is refused, not read as 287) is the services' refusal ``bad_context`` (400), with every field's
    messages beside it; other bad fields are DRF's 400 ``{field: [messages]}``."""
    body = serializer_class(data=request.data)
    if body.is_valid():
        return body.validated_data
    errors = {name: [str(m) for m in messages] for name, messages in body.errors.items()}
    if "context" in errors:
        message = f"context: {' '.join(errors['context'])}"
        raise Refused(ConversationError(message, "bad_context"), fields=errors)
    raise exceptions.ValidationError(body.errors)


def _context(round_, context_id):
    if context_id is None:
        return None
    context = context_of_round(round_, context_id)
    if context is None:
        raise Refused(ConversationError("That context is not one of the current round's.", "bad_context"))
    return context


def _wants_stream(request) -> bool:
    """True when the client asked for the answer as server-sent events: ``Accept: text/event-stream``
    (anywhere in the header, as the page reads it), ``?stream=1``, or DRF's ``?format=sse`` (the
    negotiated ``EventStreamRenderer``)."""
    return (
        "text/event-stream" in request.headers.get("Accept", "")
        or request.query_params.get("stream") == "1"
        or (getattr(request, "accepted_media_type", None) or "").startswith("text/event-stream")
    )


def _own(request, pk) -> Conversation:
    conversation = selectors.own_conversation(request.user, positive_int_or_404(pk, what="conversation"))
    if conversation is None:
        raise exceptions.NotFound("No such conversation.")
    return conversation


@extend_schema(parameters=[SLUG])
class ConversationStart(APIView):
    """Start a conversation with the current round's target, on ``context`` where the task has contexts
    (the caller's other open conversation in the round is abandoned when it has no message yet; one with
    messages must be judged or left first: 409 ``open_conversation``). 400 ``bad_context`` for a context
    left out where the task needs one, not a JSON integer, or not of the current round; 404 for a task
    that is not a red-teaming task; 409 when the round is closed or has no ready target."""

    permission_classes = [IsContributor]

    @extend_schema(request=StartSerializer, responses={201: ConversationSerializer})
    def post(self, request, slug):
        round_ = _red_team_round(slug)
        context = _context(round_, _body(StartSerializer, request).get("context"))
        conversation = _run(
            lambda: start_conversation(round_=round_, annotator=request.user, context=context)
        )
        return Response(ConversationSerializer(conversation).data, status=status.HTTP_201_CREATED)


class ConversationDetail(APIView):
    """One of the caller's conversations with its turns; another user's is a 404, as a missing one."""

    permission_classes = [IsContributor]

    @extend_schema(parameters=[CONVERSATION_ID], responses={200: ConversationSerializer})
    def get(self, request, pk):
        return Response(ConversationSerializer(_own(request, pk)).data)


class TurnCreate(APIView):
    """Send a message to the conversation. The answer comes as JSON once whole (201; 200 for a message
    resent with its ``client_token``, with the stored turn), or, with ``Accept: text/event-stream``, as
    server-sent events: ``turn``, ``queued`` while the model answers others, ``token`` per piece, ``done``
    with the stored turn (docs/api.md); ``?stream=1`` asks for the stream too. 400 for a refused text or
    a conversation over the model's context (with the counts), 409 for a full, closed or busy
    conversation; a refusal's body is ``{"detail", "code"}``."""

    permission_classes = [IsContributor]
    renderer_classes = [JSONRenderer, EventStreamRenderer]

    def get_throttles(self):
        return [ExampleCreateThrottle(), TurnThrottle()]

    def throttled(self, request, wait):
        # As the page says it, with the rate; the body's code is "throttled".
        rate = TurnThrottle().get_rate()
        raise exceptions.Throttled(
            wait=wait,
            detail=f"You are sending messages faster than this server allows ({rate} per person, "
            "refused messages included).",
        )

    def handle_exception(self, exc):
        # A refusal is JSON with its status, also to a client that asked for a stream: no stream began.
        self.request.accepted_renderer, self.request.accepted_media_type = JSONRenderer(), "application/json"
        return super().handle_exception(exc)

    @extend_schema(
        parameters=[CONVERSATION_ID, STREAM],
        request=TurnBodySerializer,
        responses={
            (201, "application/json"): OpenApiResponse(TurnSerializer, description="The answer, whole."),
            (200, "text/event-stream"): OpenApiResponse(OpenApiTypes.STR, description=STREAMED_OR_RESENT),
            (200, "application/json"): OpenApiResponse(TurnSerializer, description=STREAMED_OR_RESENT),
        },
    )
    def post(self, request, pk):
        conversation = _own(request, pk)
        body = TurnBodySerializer(data=request.data)
        body.is_valid(raise_exception=True)
        token = body.validated_data.get("client_token")
        resent = token is not None and conversation.turns.filter(client_token=token).exists()
        stream = _run(
            lambda: send_turn(
                conversation=conversation,
                annotator=request.user,
                prompt=body.validated_data["prompt"],
                client_token=token,
            )
        )
        if _wants_stream(request):
            return sse_response(request, stream)
        code = status.HTTP_200_OK if resent else status.HTTP_201_CREATED
        if isinstance(stream, CandidateStreams):
            answers = [turn_payload(t, anonymous=True) for t in stream.drain()]
            return Response(SideAnswersSerializer({"answers": answers}).data, status=code)
        turn = stream.drain()
        hidden = _anonymous(conversation)
        return Response(TurnSerializer(turn_payload(turn, anonymous=hidden)).data, status=code)


class Ratings(APIView):
    """Side by side: rate each answer to the first message (a 1-100 score, the rubric, failure categories)
    and choose the one to go on with (201, the conversation). Sent again with the same ratings, 200;
    with others, 409 ``already_rated``. 400 ``invalid`` names the answer at fault (a letter unknown or
    left out, a rubric answer, a category); 409 ``not_ready`` while an answer is still coming."""

    permission_classes = [IsContributor]

    @extend_schema(
        parameters=[CONVERSATION_ID],
        request=RatingsSerializer,
        responses={201: ConversationSerializer, 200: ConversationSerializer},
    )
    def post(self, request, pk):
        conversation = _own(request, pk)
        before = conversation.chosen_turn_id
        body = RatingsSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        rated = _run(
            lambda: rate_answers(
                conversation=conversation,
                annotator=request.user,
                ratings=body.validated_data["ratings"],
                chosen=body.validated_data["chosen"],
            )
        )
        code = status.HTTP_200_OK if before is not None else status.HTTP_201_CREATED
        return Response(ConversationSerializer(rated).data, status=code)


class Judgement(APIView):
    """Answer the task's rubric for the conversation's answers and tag the failure's categories; the
    conversation becomes an example of its round (201). Sent again with the same answers, the same
    example (200); with other answers or categories, 409 ``already_judged`` naming the stored
    judgement. With ``answered_turns`` other than the conversation's answered turns, 409
    ``stale_judgement``; nothing is stored."""

    permission_classes = [IsContributor]

    @extend_schema(
        parameters=[CONVERSATION_ID],
        request=JudgementSerializer,
        responses={201: ExampleSerializer, 200: ExampleSerializer},
    )
    def post(self, request, pk):
        conversation = _own(request, pk)
        before = conversation.example_id
        body = JudgementSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        example = _run(
            lambda: submit_conversation(
                conversation=conversation,
                annotator=request.user,
                rubric_answers=body.validated_data["rubric"],
                categories=body.validated_data["categories"],
                answered_turns=body.validated_data.get("answered_turns"),
            )
        )
        code = status.HTTP_200_OK if before == example.pk else status.HTTP_201_CREATED
        return Response(ExampleSerializer(example, context={"request": request}).data, status=code)


@extend_schema(parameters=[SLUG])
class ChoiceItemCreate(APIView):
    """Write a multiple-choice item on a context of the current round: the question, its correct answer
    and hard negatives. The target picks an option on the server (201; 200 for a ``client_token``
    already used, with the stored item)."""

    permission_classes = [IsContributor]

    def get_throttles(self):
        return [ExampleCreateThrottle()]

    @extend_schema(
        request=ChoiceItemSerializer, responses={201: ChoiceResultSerializer, 200: ChoiceResultSerializer}
    )
    def post(self, request, slug):
        round_ = _red_team_round(slug)
        data = _body(ChoiceItemSerializer, request)
        context = _context(round_, data.get("context"))
        example, created = _run(
            lambda: write_choice_item(
                round_=round_,
                annotator=request.user,
                context=context,
                question=data["question"],
                answer=data["answer"],
                negatives=data["negatives"],
                client_token=data.get("client_token"),
            )
        )
        result = {
            "example": example.pk,
            "options": example.inputs.get("options", []),
            "answer": example.target.get("answer"),
            "picked": (example.metadata or {}).get("picked"),
            "model_wrong": bool(example.model_wrong),
        }
        code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
        return Response(ChoiceResultSerializer(result).data, status=code)
