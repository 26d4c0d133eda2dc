"""The OpenAPI generator of the API: drf-spectacular's ``AutoSchema`` plus the error responses every
endpoint can give, so the schema is accurate about them (schemathesis checks status codes).

An operation keeps whatever responses its view declares; this adds the standard ones it did not:
400 (bad query or body), 401 (missing or bad credentials), 403 (not allowed, blocked, CSRF) and 404
(unknown object, slug or page) everywhere; for writes also 409 (conflicting state or an
``Idempotency-Key`` still in progress), 413 (body over ``DATA_UPLOAD_MAX_MEMORY_SIZE``), 415 (unknown
content type), 422 (``Idempotency-Key`` reused for another request) and 429 (throttled). Bodies are
``{"detail": message}`` or ``{field: [messages]}`` (``core.api.errors``).
"""

from __future__ import annotations

from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema

ERROR_SCHEMA = {
    "type": "object",
    "description": '`{"detail": "message"}`, or `{"field": ["message", ...]}` for bad input.',
    "additionalProperties": {},
}

READ_ERRORS = {
    "400": "Bad query parameters or body: field messages.",
    "401": "No or invalid credentials (send `Authorization: Token <key>`).",
    "403": "Not allowed for this caller (e.g. a blocked account, not the author, CSRF for sessions).",
    "404": "No such object (or not visible to the caller), or no such page.",
}
WRITE_ERRORS = {
    **READ_ERRORS,
    "409": "Conflicts with the current state, or the same Idempotency-Key is still being processed.",
    "413": "The request body is too large.",
    "415": "Unsupported Content-Type.",
    "422": "The Idempotency-Key was already used for a different request.",
    "429": "Too many requests: throttled (see Retry-After).",
}


class AutoSchema(SpectacularAutoSchema):
    """``AutoSchema`` that documents the API's standard error responses (see the module docstring)."""

    def get_operation(self, *args, **kwargs):
        operation = super().get_operation(*args, **kwargs)
        if operation is None:
            return operation
        errors = READ_ERRORS if self.method in ("GET", "HEAD", "OPTIONS") else WRITE_ERRORS
        responses = operation.setdefault("responses", {})
        for code, description in errors.items():
            responses.setdefault(
                code,
                {"description": description, "content": {"application/json": {"schema": ERROR_SCHEMA}}},
            )
        return operation
