"""The model API (docs/api.md): list and read model cards, upload a zipped model, ask a model to predict.

Thin over ``models_registry.services`` (``register_uploaded_model``), ``models_registry.selectors``
(``models_visible_to``) and ``models_registry.inference`` (``predict``).

Visibility: published models are visible to everyone; an unpublished one only to its owner, its task's
owners and superusers; to anyone else its id answers 404. Uploading needs a signed-in, unblocked user;
``allow_pickle`` only the task's owners (403 otherwise).
"""

from __future__ import annotations

import logging

from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import generics, status
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import IsAuthenticated, IsAuthenticatedOrReadOnly
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api.idempotency import idempotent
from core.api.permissions import can_contribute
from core.spans import source_offset
from engine.explain import attributions
from engine.runtime.outputs import clean_output
from models_registry import explanations, inference
from models_registry.filters import RegisteredModelFilter
from models_registry.kinds import span_models
from models_registry.models import RegisteredModel
from models_registry.selectors import models_visible_to
from models_registry.serializers import (
    ModelCardSerializer,
    ModelErrorSerializer,
    ModelUploadSerializer,
    PredictResponseSerializer,
    PredictSerializer,
    upload_limit,
)
from models_registry.services import ModelRegistryError, register_uploaded_model
from models_registry.throttling import ExplainThrottle

logger = logging.getLogger(__name__)

ERROR = ModelErrorSerializer
FIELD_ERRORS = OpenApiResponse(
    response={"type": "object", "additionalProperties": {}},
    description="Bad input: `{parameter or field: [messages]}` (nested for list items), or `{detail}`.",
)


def _visible_model(request, pk) -> RegisteredModel:
    try:
        return models_visible_to(request.user).get(pk=int(pk))
    except (RegisteredModel.DoesNotExist, ValueError, TypeError, OverflowError):
        raise NotFound("No such model.") from None


class ModelListCreateView(generics.ListCreateAPIView):
    """``GET /api/models/``: the model cards the caller may see; ``POST``: upload a zipped model."""

    serializer_class = ModelCardSerializer
    filterset_class = RegisteredModelFilter
    permission_classes = [IsAuthenticatedOrReadOnly]
    parser_classes = [MultiPartParser, FormParser]

    def get_queryset(self):
        return (
            models_visible_to(self.request.user)
            .select_related("task", "owner")
            .order_by("task__slug", "name")
        )

    @extend_schema(
        summary="List models",
        description="Model cards the caller may see (published ones, plus the caller's own and those of "
        "tasks the caller owns), by task and name.",
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    @extend_schema(
        summary="Upload a model (zip)",
        description=(
            "A zip of a `save_pretrained` directory (safetensors weights unless `allow_pickle`, which only "
            "the task's owners may set). The zip is checked and unpacked at once (unsafe paths, links, "
            "zip bombs and too many files are refused: the model is then `failed` with the reason); the "
            "check job (load, label set, probe input) runs in the background. Answers 202 while the check "
            "is queued (`uploaded` or `checking`), 201 once the status is decided (`ready` or `failed`). "
            "A zip larger than the server's limit answers 413 and stores nothing."
        ),
        request={"multipart/form-data": ModelUploadSerializer},
        responses={
            201: ModelCardSerializer,
            202: ModelCardSerializer,
            400: FIELD_ERRORS,
            401: ERROR,
            403: ERROR,
            413: ERROR,
        },
    )
    @idempotent
    def post(self, request, *args, **kwargs):
        if not can_contribute(request.user):
            raise PermissionDenied("Blocked users cannot register models.")
        form = ModelUploadSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        task = data["task"]
        if data["allow_pickle"] and not task.is_owner(request.user):
            raise PermissionDenied("Only the task's owners may allow pickle checkpoints.")
        limit = upload_limit()
        if data["file"].size > limit:
            return Response(
                {"detail": f"The upload is {data['file'].size:,} bytes; the limit is {limit:,} bytes."},
                status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
            )
        try:
            model = register_uploaded_model(
                task=task,
                name=data["name"],
                owner=request.user,
                fileobj=data["file"],
                card=form.card(),
                allow_pickle=data["allow_pickle"],
                is_published=data["published"],
                is_anonymous=data["anonymous"],
            )
        except ModelRegistryError as exc:
            return Response({"name": [str(exc)]}, status=status.HTTP_400_BAD_REQUEST)
        model.refresh_from_db()  # the check may already have run (jobs inline, or a fast worker)
        decided = model.status in (RegisteredModel.Status.READY, RegisteredModel.Status.FAILED)
        body = ModelCardSerializer(model, context=self.get_serializer_context()).data
        return Response(body, status=status.HTTP_201_CREATED if decided else status.HTTP_202_ACCEPTED)


class ModelDetailView(generics.RetrieveAPIView):
    """``GET /api/models/{id}/``: one model's card (404 when the caller may not see it)."""

    serializer_class = ModelCardSerializer

    def get_object(self):
        return _visible_model(self.request, self.kwargs["pk"])

    @extend_schema(summary="Read a model's card", responses={200: ModelCardSerializer, 404: ERROR})
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)


def _offsets_into_sent_text(model: RegisteredModel, body: dict, outputs: list[dict]) -> list[dict]:
    """Span outputs with ``answer_start`` counted in the passage as the caller sent it.

    The model reads the passage with its newlines normalised (CRLF -> LF), so its offset is one short
    per CRLF before the answer in the text that was sent; ``core.spans.source_offset`` maps it back.
    """
    if not span_models(model.task.cfg):
        return outputs
    field = model.task.cfg.target_field["context_field"]
    for sent, output in zip(body["inputs"], outputs, strict=True):
        passage = sent.get(field)
        if isinstance(output.get("answer_start"), int) and isinstance(passage, str):
            output["answer_start"] = source_offset(passage, output["answer_start"])
    return outputs


def _with_explanations(model: RegisteredModel, inputs: list[dict], outputs: list[dict]) -> list[dict]:
    """Each output plus ``attributions.Explanation.as_api()`` of its input, the answered label as target.

    A span output gets ``attributions: null`` with the reason (span models are not explained).
    """
    if any("label" not in o for o in outputs):
        return [{**o, **attributions.Explanation(unavailable=attributions.SPAN).as_api()} for o in outputs]
    targets = [o["label"] if o["label"] in model.task.cfg.labels else None for o in outputs]
    explained = explanations.explain(model, inputs, targets=targets)
    return [{**o, **e.as_api()} for o, e in zip(outputs, explained, strict=True)]


class ModelPredictView(APIView):
    """``POST /api/models/{id}/predict/``: the model's outputs for 1 to 64 input objects."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        summary="Ask a model to predict",
        description=(
            "`inputs`: a list of 1 to 64 objects keyed by the task's model input field names (for the "
            "hate-speech task: `statement`). Answers one output per input, in order: "
            "`{label, probabilities}` for a classifier, `{answer, answer_start, score}` for extractive QA "
            "(`answer_start` in code points into the passage). "
            "With `explain: true` (at most 8 inputs), each classifier output also carries `attributions`: "
            "`[{token, start, end, score, field}]` by integrated gradients on the word embeddings "
            "(baseline: [PAD] at every non-special token; 50 steps), with `target_label` (the answered "
            "label), `logit_input`, `logit_baseline`, `attribution_sum`, `convergence_delta`, `tolerance`, "
            "`n_steps` and `truncated`; or `attributions: null` with `explanation_unavailable` (remote "
            "endpoint and extractive QA models). `words` gives the same per whole word of the text "
            "(`[{word, start, end, score, field}]`, each the sum of its tokens). Explanations are "
            "throttled per user, counted in texts (DYNABENCH_EXPLAIN_RATE, default 10/min): over it, 429 "
            "with Retry-After. "
            "409 when the model is not ready; 502 when the model fails to answer (the message says why)."
        ),
        request=PredictSerializer,
        examples=[
            OpenApiExample(
                "Two hate-speech statements",
                value={"inputs": [{"statement": "I love my neighbours 🌈"}, {"statement": "They are rats."}]},
                request_only=True,
            ),
            OpenApiExample(
                "A classifier's outputs",
                value={
                    "model": 3,
                    "outputs": [
                        {"label": "not-hateful", "probabilities": {"hateful": 0.08, "not-hateful": 0.92}},
                        {"label": "hateful", "probabilities": {"hateful": 0.97, "not-hateful": 0.03}},
                    ],
                },
                response_only=True,
            ),
            OpenApiExample(
                "An explained answer (explain: true)",
                value={
                    "model": 3,
                    "outputs": [
                        {
                            "label": "hateful",
                            "probabilities": {"hateful": 0.77, "not-hateful": 0.23},
                            "attributions": [
                                {"token": "They", "start": 0, "end": 4, "score": 0.10, "field": "statement"},
                                {"token": "are", "start": 5, "end": 8, "score": 0.24, "field": "statement"},
                                {"token": "rats", "start": 9, "end": 13, "score": 1.10, "field": "statement"},
                                {"token": "🐀", "start": 14, "end": 15, "score": 0.31, "field": "statement"},
                            ],
                            "words": [
                                {"word": "They", "start": 0, "end": 4, "score": 0.10, "field": "statement"},
                                {"word": "are", "start": 5, "end": 8, "score": 0.24, "field": "statement"},
                                {"word": "rats", "start": 9, "end": 13, "score": 1.10, "field": "statement"},
                                {"word": "🐀", "start": 14, "end": 15, "score": 0.31, "field": "statement"},
                            ],
                            "target_label": "hateful",
                            "logit_input": 1.49,
                            "logit_baseline": -0.26,
                            "attribution_sum": 1.75,
                            "convergence_delta": 0.000002,
                            "tolerance": 0.055,
                            "n_steps": 50,
                            "truncated": False,
                        }
                    ],
                },
                response_only=True,
            ),
        ],
        responses={
            200: PredictResponseSerializer,
            400: FIELD_ERRORS,
            401: ERROR,
            404: ERROR,
            409: ERROR,
            429: ERROR,
            502: ERROR,
        },
    )
    @idempotent
    def post(self, request, pk):
        model = _visible_model(request, pk)
        form = PredictSerializer(data=request.data, context={"task": model.task})
        form.is_valid(raise_exception=True)
        if model.status != RegisteredModel.Status.READY:
            return Response(
                {"detail": f"Model {model.pk} is not ready ({model.status}); it cannot answer."},
                status=status.HTTP_409_CONFLICT,
            )
        if form.validated_data["explain"]:  # after the checks: a bad call counts nothing
            ExplainThrottle(self).charge(request, len(form.validated_data["inputs"]))
        try:
            outputs = [clean_output(o) for o in inference.predict(model, form.validated_data["inputs"])]
        except inference.InferenceError as exc:
            return Response(
                {"detail": f"The model could not answer: {exc}"}, status=status.HTTP_502_BAD_GATEWAY
            )
        except Exception as exc:  # noqa: BLE001 - a model's crash is the model's failure, not a 500
            logger.exception("prediction by model %s failed", model.pk)
            return Response(
                {"detail": f"The model could not answer ({type(exc).__name__})."},
                status=status.HTTP_502_BAD_GATEWAY,
            )
        outputs = _offsets_into_sent_text(model, request.data, outputs)
        if form.validated_data["explain"]:
            outputs = _with_explanations(model, form.validated_data["inputs"], outputs)
        return Response({"model": model.pk, "outputs": outputs})
