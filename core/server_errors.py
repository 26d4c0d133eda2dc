"""The answer to an unhandled exception (Django's ``handler500``, set in ``dynabench.urls``).

A database that is unreachable or restarting (``django.db.OperationalError`` or ``InterfaceError``,
raised anywhere: a view, the session middleware, the authentication of a token) is not a bug: the
answer is 503 with ``Retry-After: 5``, so clients and load balancers retry; nothing acknowledged was
lost, since a write either committed before it or is rolled back with the request. Every other
exception is a 500. Both answer JSON (``{"detail": ...}``) under ``/api/``, JSON in OpenAI's error shape
under ``/v1/`` and a page elsewhere.
"""

from __future__ import annotations

import sys

from django.db import InterfaceError, OperationalError
from django.http import HttpResponse, JsonResponse
from django.template.loader import render_to_string

API_PREFIX = "/api/"
OPENAI_PREFIX = "/v1/"
RETRY_AFTER_SECONDS = 5
DATABASE_UNAVAILABLE = (
    "The database is unavailable for a moment; nothing you saved is lost. Try again in a few seconds."
)
SERVER_ERROR = (
    "Something went wrong on our side; the error has been logged. What you had already saved is kept."
)


def database_unavailable(exc: BaseException | None) -> bool:
    """Whether ``exc`` (or an exception it was raised from) is a lost or refused database connection."""
    while exc is not None:
        if isinstance(exc, (OperationalError, InterfaceError)):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def server_error(request) -> HttpResponse:
    """503 for a database outage, 500 otherwise (module docstring). Called by Django while the exception
    is being handled, so ``sys.exc_info()`` holds it."""
    unavailable = database_unavailable(sys.exc_info()[1])
    status = 503 if unavailable else 500
    message = DATABASE_UNAVAILABLE if unavailable else SERVER_ERROR
    if request.path.startswith(API_PREFIX):
        response = JsonResponse({"detail": message}, status=status)
    elif request.path.startswith(OPENAI_PREFIX):  # models_registry/openai_compat: OpenAI's error shape
        error = {"message": message, "type": "server_error", "param": None, "code": None}
        response = JsonResponse({"error": error}, status=status)
    else:
        page = render_to_string("503.html" if unavailable else "500.html")
        response = HttpResponse(page, status=status)
    if unavailable:
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response
