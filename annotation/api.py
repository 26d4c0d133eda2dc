"""API views of examples (docs/api.md): write one (server-side model verdict), list, read, retract, flag.

Thin: writes go through ``annotation.services`` and reads through ``annotation.selectors``. The create
body is derived from the task config (``serializers.example_create_serializer``).
"""

from __future__ import annotations

import uuid

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import exceptions, generics, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api.idempotency import HEADER as IDEMPOTENCY_HEADER
from core.api.idempotency import idempotent
from core.api.lookups import positive_int_or_404
from core.api.permissions import IsContributor, IsContributorForWrites
from core.api.throttling import ExampleCreateThrottle
from tasks.api import SLUG, NotQualifiedError
from tasks.selectors import task_or_404

from . import confidence, selectors, services, submissions
from .filters import ExampleFilter
from .models import Example
from .serializers import (
    CREATE_BODY_SCHEMA,
    ExampleSerializer,
    FlagSerializer,
    example_create_serializer,
    input_names,
)
from .throttling import ConfidenceThrottle

EXAMPLE_ID = OpenApiParameter("id", OpenApiTypes.INT, OpenApiParameter.PATH, description="The example's id.")


class RoundNotOpen(exceptions.APIException):
    """409: the task has no open current round."""

    status_code = status.HTTP_409_CONFLICT
    default_detail = "This task has no open round; it is not collecting examples."
    default_code = "round_not_open"


def service_errors(exc: services.ExampleError) -> exceptions.ValidationError:
    """A service ``ExampleError`` as a DRF 400, its ``__all__`` key renamed ``non_field_errors``."""
    return exceptions.ValidationError(
        {("non_field_errors" if k == services.NON_FIELD else k): v for k, v in exc.errors.items()}
    )


ROUND_FILTER = OpenApiParameter(
    "round",
    {"type": "integer", "minimum": 1, "maximum": 2**31 - 1},
    OpenApiParameter.QUERY,
    description="Round number.",
)


@extend_schema(parameters=[SLUG])
class ExampleListCreate(generics.ListAPIView):
    """GET: the task's examples the caller may see (their own; every one for task owners), newest first.
    POST: write an example in the current round; the server runs the target model(s) and decides
    ``model_wrong``. Signed-in callers; writing needs an unblocked account; POSTs are throttled
    (``DYNABENCH_CREATE_RATE``) and honour ``Idempotency-Key``."""

    serializer_class = ExampleSerializer
    permission_classes = [IsContributorForWrites]
    filterset_class = ExampleFilter

    def get_throttles(self):
        return [ExampleCreateThrottle()] if self.request.method == "POST" else []

    @extend_schema(parameters=[ROUND_FILTER])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # schema generation: no request, no task
            return Example.objects.none()
        task = task_or_404(self.kwargs["slug"])
        return selectors.with_history(
            selectors.examples_visible_to(self.request.user).filter(round__task=task)
        ).order_by("-created_at", "-id")

    @extend_schema(
        request={"application/json": CREATE_BODY_SCHEMA},
        responses={201: ExampleSerializer},
        examples=[
            OpenApiExample(
                "hate-speech",
                value={
                    "statement": "I love all people 🌈",
                    "label": "not-hateful",
                    "explanation": "",
                    "metadata": {},
                },
                request_only=True,
            ),
            OpenApiExample(
                "QA (context_span target)",
                value={
                    "context": 12,
                    "question": "Who wrote it?",
                    "answer": {"answer": "Ada", "answer_start": 31},
                },
                request_only=True,
            ),
        ],
    )
    @idempotent
    def post(self, request, slug: str):
        task = task_or_404(slug)
        # Before the body is read, so a closed round answers 409 whatever was sent; the service checks
        # the same rule (Round.is_open) again under the round's row lock when it stores the example.
        if task.open_round is None:
            raise RoundNotOpen()
        body = example_create_serializer(task)(data=request.data, context={"task": task, "request": request})
        body.is_valid(raise_exception=True)
        data = body.validated_data
        target_name = task.cfg.target_field["name"]
        submission = submissions.Submission(
            task=task,
            annotator=request.user,
            inputs={name: data[name] for name in input_names(task) if name in data},
            target=data[target_name],
            context=data["context_obj"],
            context_given=True,
            explanation=data.get("explanation", ""),
            metadata=data.get("metadata") or {},
            client_token=client_token_of(request),
            suggestion_id=data.get("suggestion"),
        )
        try:
            example = submissions.submit(submission)
        except submissions.Refused as refused:
            if refused.code == "not_collecting":  # closed since the check above
                raise RoundNotOpen() from None
            if isinstance(refused.cause, services.NotQualifiedToWrite):  # the task's rules: 403, code, url
                raise NotQualifiedError(
                    refused.cause.code, refused.cause.message, refused.cause.url
                ) from None
            raise service_errors(refused.cause or refused) from None
        example = selectors.with_history(Example.objects.filter(pk=example.pk)).get()
        return Response(
            ExampleSerializer(example, context={"request": request}).data,
            status=status.HTTP_201_CREATED,
            headers={"Location": f"/api/examples/{example.pk}/"},
        )


class ConfidenceProbe(APIView):
    """Uncertainty mode's live goal: how sure the round's target models are of a draft, nothing stored
    (``annotation.confidence.probe_confidence``). The body is an example's without its target: the
    input fields and ``context``. Answers ``{"goal": {"measure", "threshold", "rule"}, "unsure": bool |
    null, "models": [{"model", "answer", "value", "unsure", "error"}]}``; 400 for bad inputs or a task not
    in uncertainty mode, 403 for a writer the task's rules refuse, 409 when no round is open, 429 over
    the rate."""

    permission_classes = [IsContributor]
    throttle_classes = [ConfidenceThrottle]

    @extend_schema(request={"application/json": CREATE_BODY_SCHEMA}, responses={200: dict})
    def post(self, request, slug: str):
        task = task_or_404(slug)
        if task.open_round is None:
            raise RoundNotOpen()
        body = example_create_serializer(task, with_target=False)(
            data=request.data, context={"task": task, "request": request}
        )
        body.is_valid(raise_exception=True)
        data = body.validated_data
        try:
            probe = confidence.probe_confidence(
                task=task,
                annotator=request.user,
                inputs={name: data[name] for name in input_names(task) if name in data},
                context=data["context_obj"],
            )
        except services.NotQualifiedToWrite as exc:
            raise NotQualifiedError(exc.code, exc.message, exc.url) from None
        except services.ExampleError as exc:
            raise service_errors(exc) from None
        return Response(confidence.as_json(task.cfg, probe))


# Namespace of the client tokens derived from Idempotency-Keys (a fixed, random UUID).
IDEMPOTENCY_TOKEN_NAMESPACE = uuid.UUID("6f1d2a4e-3c55-4b8e-9d0a-2f7b9c1e8a53")


def client_token_of(request) -> uuid.UUID | None:
    """The example's ``client_token`` for an API create: UUIDv5 of the caller's ``Idempotency-Key``, or
    None without one.

    Why: the key's record says "in progress" until the response is stored. A worker killed after the
    example committed but before that leaves the record to be taken over by a retry
    (``core.api.idempotency``), which runs the create again; with the token derived from the key,
    ``create_example`` finds the stored example instead of writing it twice.
    """
    key = request.headers.get(IDEMPOTENCY_HEADER)
    return uuid.uuid5(IDEMPOTENCY_TOKEN_NAMESPACE, key) if key else None


def visible_example_or_404(request, pk) -> Example:
    """The example ``pk`` if the caller may see it (author, task owner, superuser); else 404."""
    pk = positive_int_or_404(pk, what="example")
    example = selectors.with_history(selectors.examples_visible_to(request.user)).filter(pk=pk).first()
    if example is None:
        raise exceptions.NotFound("No such example.")
    return example


def own_example_or_403(request, pk) -> Example:
    """The caller's own example ``pk``: 404 if they cannot see it, 403 if they can but did not write it."""
    example = visible_example_or_404(request, pk)
    if example.annotator_id != request.user.pk:
        raise exceptions.PermissionDenied("Only the author of an example can change it.")
    return example


@extend_schema(parameters=[EXAMPLE_ID])
class ExampleDetail(generics.RetrieveAPIView):
    """One example, for its author and the task's owners (404 for anyone else)."""

    serializer_class = ExampleSerializer
    permission_classes = [IsAuthenticated]

    def get_object(self):
        return visible_example_or_404(self.request, self.kwargs["pk"])


def _refreshed(request, example: Example) -> Response:
    example = selectors.with_history(Example.objects.filter(pk=example.pk)).get()
    return Response(ExampleSerializer(example, context={"request": request}).data)


class ExampleRetract(APIView):
    """The author withdraws their example: it leaves every count and queue (idempotent). 403 for a task
    owner who is not the author; 404 for anyone who cannot see it."""

    permission_classes = [IsAuthenticated]

    @extend_schema(parameters=[EXAMPLE_ID], request=None, responses={200: ExampleSerializer})
    @idempotent
    def post(self, request, pk):
        example = own_example_or_403(request, pk)
        try:
            services.retract_example(example=example, user=request.user)
        except services.ExampleError as exc:
            raise service_errors(exc) from None
        return _refreshed(request, example)


class AlreadyDone(exceptions.APIException):
    """409: the example's state does not allow this change (retracted, already flagged)."""

    status_code = status.HTTP_409_CONFLICT
    default_code = "conflict"


class ExampleFlag(APIView):
    """The author flags their own example for the task owners, once, with an optional ``reason``.
    409 when it is retracted or already flagged; 403/404 as for retract."""

    permission_classes = [IsAuthenticated]

    @extend_schema(parameters=[EXAMPLE_ID], request=FlagSerializer, responses={200: ExampleSerializer})
    @idempotent
    def post(self, request, pk):
        example = own_example_or_403(request, pk)
        body = FlagSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            services.flag_example(example=example, user=request.user, reason=body.validated_data["reason"])
        except services.ExampleError as exc:
            if "reason" in exc.errors:
                raise service_errors(exc) from None
            raise AlreadyDone(" ".join(exc.errors.get(services.NON_FIELD, [str(exc)]))) from None
        return _refreshed(request, example)
