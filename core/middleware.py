"""Request guards that run before Django's own middleware."""

from __future__ import annotations

import json
from urllib.parse import unquote_to_bytes

from django.conf import settings
from django.core.exceptions import BadRequest, RequestDataTooBig, TooManyFieldsSent
from django.http import HttpResponseBadRequest, HttpResponseNotAllowed, JsonResponse
from django.http.multipartparser import MultiPartParserError
from django.template.loader import render_to_string

from core.text_rules import repeated_parameter_message, repeated_parameters

FORM_CONTENT_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")
API_PREFIX = "/api/"
#: The OpenAI-compatible endpoint (models_registry/openai_compat): JSON errors in OpenAI's shape.
OPENAI_PREFIX = "/v1/"
TOO_LARGE = "The request body is too large or has too many fields."
NOT_UTF8 = (
    "The form sent text that is not valid UTF-8 (such as a lone surrogate), so it was not read and nothing "
    "was saved."
)


class ApiJsonResponse(JsonResponse):
    """A JSON answer written as the API's own (DRF's ``JSONRenderer``: no spaces after separators,
    non-ASCII kept), for the answers middleware gives before a view runs."""

    def __init__(self, data, **kwargs):
        kwargs.setdefault("json_dumps_params", {"separators": (",", ":"), "ensure_ascii": False})
        super().__init__(data, **kwargs)


def openai_error(message: str, status: int) -> ApiJsonResponse:
    """An error in OpenAI's shape (``{"error": {"message", "type", "param", "code"}}``), for what this
    middleware refuses under ``/v1/`` before the endpoint's views run."""
    kind = "server_error" if status >= 500 else "invalid_request_error"
    return ApiJsonResponse(
        {"error": {"message": message, "type": kind, "param": None, "code": None}}, status=status
    )


def _is_utf8_form(body: bytes) -> bool:
    """Whether every name and value of a urlencoded ``body`` decodes as strict UTF-8 once percent-decoded.

    Why: Django decodes form bodies with ``errors="replace"``, so ``%ED%A0%80`` (a UTF-16 surrogate
    encoded as UTF-8, which browsers never send: they send U+FFFD themselves) would reach the services as
    three U+FFFD characters and be stored as if typed. The JSON API refuses the same text with a 400."""
    for part in body.split(b"&"):
        try:
            unquote_to_bytes(part.replace(b"+", b" ")).decode("utf-8")
        except UnicodeDecodeError:
            return False
    return True


def _content_length(request) -> int | None:
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return None


def _api_body_problem(request) -> ApiJsonResponse | None:
    """413 for an API body over ``DATA_UPLOAD_MAX_MEMORY_SIZE``; 400 for an unreadable Content-Length.

    Why: DRF's parsers read the request stream directly, so Django's own size check (made when
    ``request.body`` is read) never runs for JSON bodies. Multipart bodies are left to Django, which
    counts their non-file fields only (uploads have their own limits).
    """
    if request.content_type == "multipart/form-data":
        return None
    length = _content_length(request)
    if length is None:
        return ApiJsonResponse({"detail": "The Content-Length header is not a number."}, status=400)
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    if limit is not None and length > limit:
        return ApiJsonResponse(
            {"detail": f"The request body is too large: {length:,} bytes, at most {limit:,} allowed."},
            status=413,
        )
    return None


def _api_query_problem(request) -> ApiJsonResponse | None:
    """400 for an API query string that gives a parameter more than once (``?round=1&round=2``).

    Why: Django's ``QueryDict`` hands a view the last value, so the first was silently dropped by every
    endpoint that reads one value (the leaderboard's ``round`` and weights, the annotators' ``round``,
    a filter). No endpoint of this API takes a list as repeated parameters (lists are comma-separated),
    so a repeat is always a mistake, refused here for all of them at once.
    """
    repeated = repeated_parameters(request.GET)
    if not repeated:
        return None
    return ApiJsonResponse(
        {name: [repeated_parameter_message(count)] for name, count in repeated.items()}, status=400
    )


class RejectUnreadableFormBodyMiddleware:
    """Answer 400 to a form body Django cannot read, before anything else tries to read it.

    Under ``/api/`` it also answers 413 (JSON) to a body larger than ``DATA_UPLOAD_MAX_MEMORY_SIZE``
    (``_api_body_problem``), 400 (JSON) to a query parameter given twice (``_api_query_problem``), and
    its 400s are JSON there. Under ``/v1/`` (the OpenAI-compatible endpoint) only the 413 applies, in
    OpenAI's error shape (``_openai``).

    Why: Django raises ``BadRequest`` for a urlencoded body with a charset other than exactly
    ``utf-8`` (e.g. ``charset=utf8``) every time ``request.POST`` is touched. The CSRF check touches it,
    and so does the 400 handler (it is wrapped in ``requires_csrf_token``), so the error page itself
    failed and the client got a 500. Reading the body once here and marking it as unreadable turns
    that into one clear 400. A urlencoded body whose text is not valid UTF-8 is a 400 too
    (``_is_utf8_form``).
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path.startswith(OPENAI_PREFIX):
            return self._openai(request)
        is_api = request.path.startswith(API_PREFIX)
        if is_api:
            problem = _api_query_problem(request)
            if problem is not None:
                return problem
        if is_api and request.method not in ("GET", "HEAD", "OPTIONS"):
            problem = _api_body_problem(request)
            if problem is not None:
                return problem
        if request.method == "POST" and request.content_type in FORM_CONTENT_TYPES:
            try:
                request.POST  # noqa: B018 - parse now, on our terms
            except (BadRequest, MultiPartParserError, RequestDataTooBig, TooManyFieldsSent) as exc:
                request._mark_post_parse_error()
                too_large = isinstance(exc, RequestDataTooBig | TooManyFieldsSent)
                message = TOO_LARGE if too_large else str(exc)
                if is_api:  # the API speaks JSON, also about bodies it cannot read
                    return ApiJsonResponse({"detail": message}, status=413 if too_large else 400)
                body = render_to_string("400.html", {"message": message})
                return HttpResponseBadRequest(body)
            if request.content_type == "application/x-www-form-urlencoded" and not _is_utf8_form(
                request.body
            ):
                if is_api:
                    return ApiJsonResponse({"detail": NOT_UTF8}, status=400)
                return HttpResponseBadRequest(render_to_string("400.html", {"message": NOT_UTF8}))
        return self.get_response(request)

    def _openai(self, request):
        """Under ``/v1/``: the body size rule of ``/api/`` (413), and the answers in OpenAI's shape. Its
        bodies are JSON; a form body is not parsed here (the view answers 415)."""
        if request.method not in ("GET", "HEAD", "OPTIONS"):
            problem = _api_body_problem(request)
            if problem is not None:
                return openai_error(json.loads(problem.content)["detail"], problem.status_code)
        return self.get_response(request)


class ExplainMethodNotAllowedMiddleware:
    """Give Django's empty 405 responses (``require_POST`` views opened by a link) a short page."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if isinstance(response, HttpResponseNotAllowed) and not response.content:
            response.content = render_to_string(
                "405.html", {"allowed": response.get("Allow", ""), "method": request.method}
            )
            response["Content-Type"] = "text/html; charset=utf-8"
            # CommonMiddleware, further in, already set "Content-Length: 0" for the empty body; a
            # length that disagrees with the body breaks the response's framing for every client.
            response["Content-Length"] = str(len(response.content))
        return response
