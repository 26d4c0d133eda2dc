"""Request guards that run before Django's own middleware."""

from __future__ import annotations

from django.core.exceptions import BadRequest, RequestDataTooBig, TooManyFieldsSent
from django.http import HttpResponseBadRequest, HttpResponseNotAllowed
from django.template.loader import render_to_string

FORM_CONTENT_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


class RejectUnreadableFormBodyMiddleware:
    """Answer 400 to a form body Django cannot read, before anything else tries to read it.

    Why: Django raises ``BadRequest`` for a urlencoded body with a charset other than exactly
    ``utf-8`` (e.g. ``charset=utf8``) every time ``request.POST`` is touched. The CSRF check touches it,
    and so does the 400 handler (it is wrapped in ``requires_csrf_token``), so the error page itself
    failed and the client got a 500. Reading the body once here and marking it as unreadable turns
    that into one clear 400.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.method == "POST" and request.content_type in FORM_CONTENT_TYPES:
            try:
                request.POST  # noqa: B018 - parse now, on our terms
            except (BadRequest, RequestDataTooBig, TooManyFieldsSent) as exc:
                request._mark_post_parse_error()
                message = (
                    "The request body is too large or has too many fields."
                    if isinstance(exc, RequestDataTooBig | TooManyFieldsSent)
                    else str(exc)
                )
                body = render_to_string("400.html", {"message": message})
                return HttpResponseBadRequest(body)
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
        return response
