"""Errors of the OpenAI-compatible endpoint, in OpenAI's shape.

Every error answer is ``{"error": {"message": str, "type": str, "param": str | None, "code": str | None}}``
with the HTTP status OpenAI uses for the same case, so the ``openai`` client raises its own exception
class (400 ``BadRequestError``, 401 ``AuthenticationError``, 404 ``NotFoundError``, 429
``RateLimitError``, 5xx ``InternalServerError``) with the message. ``error_response`` turns any
exception a view meets (DRF's authentication, parsing and throttling included) into that answer; an
unexpected one is logged and answered 500 with a fixed message: never a traceback or a server path.
"""

from __future__ import annotations

import logging
import math

from django.http import Http404
from rest_framework import exceptions

from core.middleware import ApiJsonResponse
from core.server_errors import DATABASE_UNAVAILABLE, RETRY_AFTER_SECONDS, database_unavailable

logger = logging.getLogger(__name__)

INVALID_REQUEST = "invalid_request_error"
SERVER_ERROR = "server_error"
#: What the caller reads when it sends no credentials (OpenAI's wording, with this server's token).
NO_KEY = (
    "You didn't provide an API key. Send your Dynabench API token (your account page) in an "
    "Authorization header: 'Authorization: Bearer <token>'."
)
BAD_KEY = "Incorrect API key provided. Use the API token of your Dynabench account."
MODEL_FAILED = "The model failed while answering; nothing more was generated. Try again or another model."
UNEXPECTED = "The server had an error while processing your request; it has been logged."


class OpenAIError(Exception):
    """An answer of the endpoint other than success.

    Args:
        status: the HTTP status (400, 401, 404, 405, 413, 415, 429, 500, 503).
        message: for the caller, in plain words; names no server path.
        type: OpenAI's error type (``invalid_request_error``, ``server_error``, ``requests``).
        param: the request field at fault (``messages[1].role``, ``max_tokens``), or None.
        code: a stable machine code (``model_not_found``, ``context_length_exceeded``,
            ``unsupported_parameter``, ``invalid_value``, ``invalid_type``, ...), or None.
        headers: extra response headers (``Retry-After``, ``WWW-Authenticate``).
    """

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: str = INVALID_REQUEST,
        param: str | None = None,
        code: str | None = None,
        headers: dict | None = None,
    ):
        super().__init__(message)
        self.status, self.message, self.type = status, message, type
        self.param, self.code, self.headers = param, code, dict(headers or {})

    def body(self) -> dict:
        """``{"error": {"message", "type", "param", "code"}}``."""
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}

    def response(self) -> ApiJsonResponse:
        """The JSON answer with the status and headers (a plain Django response: it is also given
        outside DRF's views, by the catch-all 404)."""
        response = ApiJsonResponse(self.body(), status=self.status)
        for name, value in self.headers.items():
            response[name] = value
        return response


def invalid(message: str, *, param: str | None = None, code: str | None = "invalid_value") -> OpenAIError:
    """A 400 ``invalid_request_error`` about ``param``."""
    return OpenAIError(400, message, param=param, code=code)


def model_not_found(model_id: str) -> OpenAIError:
    """The 404 of a model id that does not exist or that the caller may not use (the same answer, so an
    id says nothing about models the caller may not see). The id is echoed cut to 200 characters."""
    shown = model_id if len(model_id) <= 200 else model_id[:200] + "…"
    return OpenAIError(
        404,
        f"The model `{shown}` does not exist or you do not have access to it.",
        param="model",
        code="model_not_found",
    )


def model_failed() -> OpenAIError:
    """The 500 of a model that crashed (could not load, or broke while generating)."""
    return OpenAIError(500, MODEL_FAILED, type=SERVER_ERROR, code="model_error")


def _from_drf(exc: exceptions.APIException) -> OpenAIError:
    detail = exc.detail
    message = str(detail) if not isinstance(detail, (list, dict)) else "The request is not valid."
    if isinstance(exc, exceptions.NotAuthenticated):
        return OpenAIError(401, NO_KEY, headers={"WWW-Authenticate": "Bearer"})
    if isinstance(exc, exceptions.AuthenticationFailed):
        return OpenAIError(401, BAD_KEY, code="invalid_api_key", headers={"WWW-Authenticate": "Bearer"})
    if isinstance(exc, exceptions.Throttled):
        wait = max(1, math.ceil(exc.wait or 1))
        return OpenAIError(
            429,
            f"Rate limit reached for chat completions (DYNABENCH_OPENAI_RATE on this server); "
            f"try again in {wait} s.",
            type="requests",
            code="rate_limit_exceeded",
            headers={"Retry-After": str(wait)},
        )
    if isinstance(exc, exceptions.ParseError):
        return OpenAIError(400, message, code="invalid_json")
    if isinstance(exc, exceptions.UnsupportedMediaType):
        return OpenAIError(
            415,
            "Send the body as JSON, with 'Content-Type: application/json'.",
            code="unsupported_media_type",
        )
    if isinstance(exc, exceptions.MethodNotAllowed):
        return OpenAIError(405, message, code="method_not_allowed")
    if isinstance(exc, exceptions.PermissionDenied):
        return OpenAIError(403, message, code="permission_denied")
    if isinstance(exc, exceptions.NotFound):
        return OpenAIError(404, "Not found.", code="not_found")
    status = exc.status_code
    return OpenAIError(status, message, type=SERVER_ERROR if status >= 500 else INVALID_REQUEST)


def error_response(exc: BaseException) -> ApiJsonResponse:
    """The OpenAI-shaped answer to ``exc``, raised anywhere in a view (see the module docstring).

    A lost database connection answers 503 with ``Retry-After`` (as ``core.server_errors`` does);
    any other unexpected exception is logged with its traceback and answered 500.
    """
    if isinstance(exc, OpenAIError):
        return exc.response()
    if isinstance(exc, Http404):
        return OpenAIError(404, "Not found.", code="not_found").response()
    if isinstance(exc, exceptions.APIException):
        return _from_drf(exc).response()
    if database_unavailable(exc):
        return OpenAIError(
            503,
            DATABASE_UNAVAILABLE,
            type=SERVER_ERROR,
            code="service_unavailable",
            headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
        ).response()
    logger.error("OpenAI-compatible endpoint: unexpected error", exc_info=exc)
    return OpenAIError(500, UNEXPECTED, type=SERVER_ERROR).response()
