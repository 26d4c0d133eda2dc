"""The answer to a request refused because the line for a local model is full
(``runtime.slots.QueueFull``; docs/serving.md, "Requests that wait for the model"): 503 with
``Retry-After``, on every route, decided here once.

* under ``/api/``: ``{"detail": message, "code": "queue_full", "waiting": n, "kept": s}``;
* under ``/v1/``: OpenAI's error shape, ``{"error": {"message", "type": "server_error", "param": null,
  "code": "queue_full"}}`` (the ``openai`` client retries a 503 after ``Retry-After``);
* a page's script (``Accept: text/event-stream`` or ``X-Requested-With: fetch``): the message as plain
  text;
* a page: the view's own page with the message shown (``page``, so what was typed is kept), or a page
  saying it.

``n`` is how many requests wait in line in this process (places kept for those refused before
included); the message says it too, with the seconds to wait; ``s`` is how many seconds the requester's
place is kept for its return (``runtime.slots``, "A refused requester keeps its place"), or null where
none is kept (a request of no one's, or not checked by ``admit``). ``QueueFullMiddleware`` answers the
``QueueFull`` a view lets through; a view that shows its own page calls ``queue_full_response`` with it.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpResponse
from django.shortcuts import render
from django.utils.http import url_has_allowed_host_and_scheme

from core.middleware import ApiJsonResponse
from core.server_errors import API_PREFIX, OPENAI_PREFIX
from engine.runtime.slots import QueueFull


def _back(request) -> str | None:
    """The page the request came from (its ``Referer``), when it is this site's own; else None."""
    referer = request.headers.get("Referer", "")
    if referer and url_has_allowed_host_and_scheme(
        referer, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return referer
    return None


def queue_full_response(
    request, exc: QueueFull, page: Callable[[], HttpResponse] | None = None
) -> HttpResponse:
    """The 503 answer to ``exc`` for ``request`` (module docstring); ``page()`` gives a page's answer
    (its status is set to 503 here), else a page saying the message is rendered."""
    if request.path.startswith(API_PREFIX):
        body = {"detail": str(exc), "code": QueueFull.code, "waiting": exc.waiting, "kept": exc.kept}
        response = ApiJsonResponse(body)
    elif request.path.startswith(OPENAI_PREFIX):
        error = {"message": str(exc), "type": "server_error", "param": None, "code": QueueFull.code}
        response = ApiJsonResponse({"error": error})
    elif (
        "text/event-stream" in request.headers.get("Accept", "")
        or request.headers.get("X-Requested-With") == "fetch"
    ):
        response = HttpResponse(str(exc), content_type="text/plain; charset=utf-8")
    elif page is not None:
        response = page()
    else:
        response = render(
            request, "models_registry/queue_full.html", {"message": str(exc), "back": _back(request)}
        )
    response.status_code = 503
    response["Retry-After"] = str(exc.retry_after)
    return response


class QueueFullMiddleware:
    """Answers a ``QueueFull`` raised by a view (``queue_full_response``); any other exception goes on."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if isinstance(exception, QueueFull):
            return queue_full_response(request, exception)
        return None
