"""Views of the OpenAI-compatible endpoint (package docstring): thin; the checks are in ``bodies``,
the choice of models in ``selectors``, the answers in ``responses`` and ``errors``."""

from __future__ import annotations

import logging

from asgiref.sync import async_to_sync
from django.views.decorators.csrf import csrf_exempt
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api.parsers import JSONParser
from core.streaming import event_stream_response, served_async
from engine.runtime.model_files import InferenceError
from engine.runtime.slots import QueueFull
from models_registry.generative import chat_stream, decoding_of

from . import responses
from .auth import BearerTokenAuthentication
from .bodies import parse_chat_request
from .errors import OpenAIError, error_response, model_failed, model_not_found
from .selectors import model_id, served_model, served_models
from .throttling import ChatCompletionThrottle

logger = logging.getLogger(__name__)


class AlwaysJSON(DefaultContentNegotiation):
    """JSON whatever ``Accept`` says (the ``openai`` client sends ``application/json`` for streams too)."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class OpenAIView(APIView):
    """Bearer-token API view answering every error in OpenAI's shape; left out of ``/api/schema/``
    (the endpoint follows OpenAI's API reference, not this API's schema)."""

    authentication_classes = [BearerTokenAuthentication]
    permission_classes = [IsAuthenticated]
    parser_classes = [JSONParser]
    renderer_classes = [JSONRenderer]
    content_negotiation_class = AlwaysJSON
    throttle_classes: list = []
    schema = None

    def handle_exception(self, exc):
        if isinstance(exc, QueueFull):  # 503 with Retry-After, as on every route (models_registry.queue_full)
            raise exc
        return error_response(exc)


def _model_entry(model) -> dict:
    return {
        "id": model_id(model),
        "object": "model",
        "created": int(model.created_at.timestamp()),
        "owned_by": model.task.slug,
    }


class ModelList(OpenAIView):
    """``GET /v1/models``: ``{"object": "list", "data": [{"id", "object": "model", "created",
    "owned_by"}]}``, the models the caller may use, by id (``owned_by`` is the task's slug)."""

    def get(self, request):
        return Response({"object": "list", "data": [_model_entry(m) for m in served_models(request.user)]})


class ModelDetail(OpenAIView):
    """``GET /v1/models/<id>``: one model's entry, or 404 ``model_not_found``."""

    def get(self, request, model: str):
        found = served_model(request.user, model)
        if found is None:
            raise model_not_found(model)
        return Response(_model_entry(found))


class ChatCompletions(OpenAIView):
    """``POST /v1/chat/completions``: the model's answer to ``messages``, whole or streamed
    (``bodies`` says what the body may hold, ``responses`` what comes back). Throttled per user."""

    throttle_classes = [ChatCompletionThrottle]

    def post(self, request):
        chat = parse_chat_request(request.data)
        model = served_model(request.user, chat.model)
        if model is None:
            raise model_not_found(chat.model)
        decoding = chat.decoding(decoding_of(model))
        try:
            stream = chat_stream(model, chat.messages, decoding)
        except InferenceError:
            logger.exception("chat completion: model %s could not start", model.pk)
            raise model_failed() from None
        if not chat.stream:
            return Response(responses.completion(stream, responses.start(stream), model_id=model_id(model)))
        details = {"model_id": model_id(model), "stops": decoding.stop, "include_usage": chat.include_usage}
        if served_async(request):
            # An ASGI worker: the answer is read on the event loop (a remote one holds no thread); its
            # first piece is awaited here, so that a refusal is still an HTTP error.
            started = async_to_sync(responses.astart)(stream)
            return event_stream_response(responses.aevents(stream, started, **details))
        started = responses.start(stream)
        return event_stream_response(responses.events(stream, started, **details))


@csrf_exempt
def not_found(request, *args, **kwargs):
    """A ``/v1/`` URL no route matches: OpenAI's 404 shape (not the site's HTML page), every method."""
    return error_response(
        OpenAIError(404, f"Invalid URL ({request.method} {request.path[:200]}).", code="unknown_url")
    )
