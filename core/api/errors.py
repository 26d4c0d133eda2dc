"""One JSON error shape for the API: ``{"detail": ...}`` or ``{field: [messages]}`` with a 4xx status.

DRF already renders its own exceptions this way; this handler adds Django's ``ValidationError`` (raised
by services and model ``full_clean``), which DRF would otherwise let escape as a 500.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import exceptions
from rest_framework.views import exception_handler as drf_exception_handler


def exception_handler(exc, context):
    """DRF's handler, after turning a Django ``ValidationError`` into a 400 with field messages. A 429
    (``Throttled``) body also carries ``"code": "throttled"``, as the API's other refusals carry theirs
    (``budget``, ``busy``, ...), so that a client tells it apart without reading the message."""
    if isinstance(exc, DjangoValidationError):
        if hasattr(exc, "error_dict"):
            exc = exceptions.ValidationError(
                {k: [str(m) for m in v.messages] for k, v in exc.message_dict.items()}
            )
        else:
            exc = exceptions.ValidationError({"non_field_errors": list(exc.messages)})
    response = drf_exception_handler(exc, context)
    if isinstance(exc, exceptions.Throttled) and response is not None and isinstance(response.data, dict):
        response.data.setdefault("code", "throttled")
    return response
