"""API views of validation (docs/api.md): the next example to validate (claimed like the validate page)
and a verdict on an example. Thin: ``validation.services`` and ``validation.selectors``."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import selectors as annotation_selectors
from annotation.api import EXAMPLE_ID
from core.api.idempotency import idempotent
from core.api.lookups import positive_int_or_404
from core.api.permissions import IsContributor
from tasks.api import SLUG, NotQualifiedError
from tasks.selectors import task_or_404

from . import selectors, services, verdict_undo
from .gold import selectors as gold_selectors
from .models import ValidationClaim
from .serializers import (
    NextValidationQuerySerializer,
    NextValidationSerializer,
    ValidationResultSerializer,
    VerdictSerializer,
    validator_fields,
)

# HTTP status of each refusal of ``services.submit_validation`` (``VerdictError.code``).
STATUS_OF_CODE = {
    "invalid": status.HTTP_400_BAD_REQUEST,
    "blocked": status.HTTP_403_FORBIDDEN,
    "own_example": status.HTTP_403_FORBIDDEN,
    "not_owner": status.HTTP_403_FORBIDDEN,
    "not_served": status.HTTP_403_FORBIDDEN,
    "already_validated": status.HTTP_409_CONFLICT,
    "settled": status.HTTP_409_CONFLICT,
    "retracted": status.HTTP_409_CONFLICT,
    "not_open": status.HTTP_409_CONFLICT,
    "nothing_to_undo": status.HTTP_409_CONFLICT,
    "undo_expired": status.HTTP_409_CONFLICT,
}


def refused(exc: services.VerdictError) -> exceptions.APIException:
    """The API error of a service refusal: the task's qualification rules answer 403 with ``code`` and
    ``url`` (``tasks.api.NotQualifiedError``); anything else ``VerdictRefused``."""
    if exc.qualification:
        return NotQualifiedError(
            exc.code, " ".join(exc.errors.get(services.NON_FIELD) or [str(exc)]), exc.url
        )
    return VerdictRefused(exc)


class VerdictRefused(exceptions.APIException):
    """A verdict the service refused, with the status of its code and ``code`` in the body."""

    def __init__(self, exc: services.VerdictError):
        self.status_code = STATUS_OF_CODE.get(exc.code, status.HTTP_400_BAD_REQUEST)
        messages = exc.errors.get(services.NON_FIELD) or [str(exc)]
        super().__init__(detail=" ".join(messages), code=exc.code)


class NextValidation(APIView):
    """Serve the caller the next example of the round to validate (``?round=N``, default the current
    round), reserved for them for ``DYNABENCH_VALIDATION_CLAIM_SECONDS`` like the validate page: asking
    again while the claim is live returns the same example. ``example`` is null when nothing is left,
    with ``queue`` saying why; when others' claims keep examples from the caller, ``hint`` says when to
    come back and the ``Retry-After`` header gives the seconds until the first of those claims runs out
    (otherwise ``hint`` is null and there is no such header). Signed-in, unblocked callers.

    The model's answer is withheld until asked, as on the validate page ("Show the model's answer"):
    unless the task config sets ``validation_shows_model_answer``, the example's ``model_outputs`` and
    ``model_wrong`` are null and ``model_answer_hidden`` is true; ``?reveal=model`` answers them (asking
    while the claim is live serves the same example, so it reveals the answer of the one being judged).
    Nothing is recorded of it, as on the page."""

    permission_classes = [IsContributor]

    @extend_schema(
        parameters=[SLUG, NextValidationQuerySerializer], responses={200: NextValidationSerializer}
    )
    def get(self, request, slug: str):
        task = task_or_404(slug)
        query = NextValidationQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        round_ = selectors.round_of(task, query.validated_data.get("round"))
        if round_ is None:
            raise exceptions.NotFound("No such round.")
        try:
            example = services.next_example(round_=round_, validator=request.user)
        except services.VerdictError as exc:
            raise refused(exc) from None
        body = {
            "round": round_.number,
            "example": None,
            "claim_expires_at": None,
            "queue": None,
            "hint": None,
            "model_answer_hidden": False,
        }
        headers = {}
        if example is None:
            summary = selectors.queue_summary(round_, request.user)
            body["queue"] = summary  # the serializer reads its counts and its reason
            wait = selectors.claim_wait(round_, request.user, summary)
            if wait is not None:
                body["hint"] = wait.hint
                headers["Retry-After"] = str(wait.seconds)
        else:
            shown = annotation_selectors.example_with_predictions(example.pk)
            claim = ValidationClaim.objects.filter(example_id=example.pk, validator=request.user).first()
            if claim is not None:
                body["claim_expires_at"] = claim.expires_at
            else:  # a gold item (validation.gold), possibly of another round: shown as one of this round
                body["claim_expires_at"] = gold_selectors.gold_claim_expiry(round_, example, request.user)
                shown.round = round_
            body["example"] = shown
            body["model_answer_hidden"] = not validator_fields(shown)["model"] or (
                not task.cfg.validation_shows_model_answer and query.validated_data.get("reveal") != "model"
            )
        serializer = NextValidationSerializer(
            body, context={"hide_model_answer": body["model_answer_hidden"]}
        )
        return Response(serializer.data, headers=headers)


def _verdict_example_or_404(request, pk):
    """The example ``pk`` of an active task if the caller may send a verdict on it (or undo theirs);
    otherwise 404, the same body for an unknown id and for an example the caller may not see
    (``selectors.verdict_examples``)."""
    pk = positive_int_or_404(pk, what="example")
    # An example the caller may not see is answered as one that does not exist.
    example = selectors.verdict_examples_of_active_tasks(request.user).filter(pk=pk).first()
    if example is None:
        raise exceptions.NotFound("No such example.")
    return example


class MyValidation(APIView):
    """Undo the caller's verdict on an example (``validation.verdict_undo``): within
    ``DYNABENCH_VALIDATION_UNDO_SECONDS`` (default 30) of recording it and while the example is
    unsettled, the vote is deleted and the example reserved for the caller again (204). 409, with
    ``detail`` saying why, when they have no verdict on it, the window is over or the example settled;
    404 as for a verdict."""

    permission_classes = [IsContributor]

    @extend_schema(parameters=[EXAMPLE_ID], request=None, responses={204: None})
    def delete(self, request, pk):
        example = _verdict_example_or_404(request, pk)
        try:
            verdict_undo.undo_verdict(example=example, validator=request.user)
        except services.VerdictError as exc:
            raise refused(exc) from None
        return Response(status=status.HTTP_204_NO_CONTENT)


class ExampleValidations(APIView):
    """Record the caller's verdict (``correct``, ``incorrect``, ``flagged``; optional ``corrected_label``
    with ``incorrect``, and ``reason``) on an example of an active task, or, on a red-teaming
    conversation, the caller's ``rubric`` answers, which give the verdict (``services.rubric_verdict``;
    ``flagged`` takes none; ``rubric`` on any other example is a 400); in uncertainty mode the caller's
    ``given_target``, their own label or span (``services.given_target_verdict``; a 400 elsewhere); the task's quorum of matching
    verdicts settles it, or one verdict with ``owner_mode`` from a task owner. A verdict without
    ``owner_mode`` counts only on an example served to the caller (``GET .../validations/next/``: its
    claim, live or run out less than ``DYNABENCH_VALIDATION_GRACE_SECONDS`` ago and not served to
    anyone else since; ``services.served_to``). 403 for one's own example, a claim of the caller's that
    ran out past the grace, a blocked account, or ``owner_mode`` from a non-owner; 409 when already
    validated by the caller, settled, retracted or not open for validation; 404, the same body as for
    an unknown id, for an example the caller may not see (``selectors.verdict_examples``: never served to them, nor theirs, nor voted on), whatever
    its state."""

    permission_classes = [IsContributor]

    @extend_schema(
        parameters=[EXAMPLE_ID], request=VerdictSerializer, responses={201: ValidationResultSerializer}
    )
    @idempotent
    def post(self, request, pk):
        example = _verdict_example_or_404(request, pk)
        body = VerdictSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = dict(body.validated_data)
        rubric = data.pop("rubric", None)
        if rubric is not None and not services.is_rubric_example(example):  # refused, not dropped
            raise exceptions.ValidationError(
                {"rubric": ["Only a red-teaming conversation takes rubric answers."]}
            )
        if data["given_target"] is not None and not services.is_given_target_example(example):
            raise exceptions.ValidationError(
                {"given_target": ["Only an example of a task in uncertainty mode takes a given target."]}
            )
        # In uncertainty mode the service asks for the validator's own label or answer when none came.
        unanchored_target = services.is_given_target_example(example)
        if not data["verdict"] and rubric is None and data["given_target"] is None and not unanchored_target:
            raise exceptions.ValidationError({"verdict": ["Choose a verdict."]})
        try:
            outcome = services.submit_validation(
                example=example, validator=request.user, rubric_answers=rubric, **data
            )
        except services.VerdictError as exc:
            if exc.code == "invalid":
                raise exceptions.ValidationError(
                    {("non_field_errors" if k == services.NON_FIELD else k): v for k, v in exc.errors.items()}
                ) from None
            raise refused(exc) from None
        v = outcome.validation
        # Unanchored: the verdict (and a corrected label, set only when they disagreed) would tell the
        # caller whether they agreed with the author.
        hidden = validator_fields(example)["unanchored"] and not data.get("owner_mode")
        result = {
            "id": v.pk,
            "example": example.pk,
            "verdict": None if hidden else v.verdict,
            "corrected_label": None if hidden else v.corrected_label,
            "reason": v.reason,
            "settled": outcome.settled,
            "example_status": outcome.status,
        }
        return Response(ValidationResultSerializer(result).data, status=status.HTTP_201_CREATED)
