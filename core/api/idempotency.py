"""``Idempotency-Key`` for the API's POSTs: a retried request replays the first one's response.

Use the ``idempotent`` decorator on any APIView handler or ViewSet action (under ``@action``)::

    class ExampleCreate(APIView):
        @idempotent
        def post(self, request, slug): ...

    @action(detail=True, methods=["post"])
    @idempotent
    def retract(self, request, pk=None): ...

or ``IdempotentCreateMixin`` on a ``CreateModelMixin`` view. It also documents the header in the
OpenAPI schema. Behaviour (after the draft "The Idempotency-Key HTTP Header Field", IETF httpapi WG):

* No header, or an anonymous caller: the request runs as usual.
* A key is scoped to the caller (user): ``(user, key)`` is stored with a fingerprint of the request
  (method, path and canonical body, uploaded files by content hash) before the handler runs.
* The same key and caller again, with the same request, after the first finished: the stored status
  and body are replayed (header ``Idempotent-Replayed: true``); the handler does not run again.
* ... while the first is still running: ``409`` ("still being processed; retry later").
* ... with a different request (other body, endpoint or method): ``422`` naming the problem.
* A handler that raises (a 4xx from a DRF exception, or a crash) or answers 5xx stores nothing: the
  key is released and a retry runs the request again. Returned responses below 500 are stored.
* A record left ``in_progress`` for more than ``DYNABENCH_IDEMPOTENCY_STALE_SECONDS`` (default 300;
  the worker died) may be taken over; records older than ``DYNABENCH_IDEMPOTENCY_TTL_SECONDS``
  (default 86,400) are forgotten and the key can be used afresh.
* A key is 1-255 printable ASCII characters; anything else is a 400.

Why the create page has a second mechanism, the form's ``client_token``: this one works at the HTTP
level, for any endpoint, replaying a stored response; it needs a caller that sends a header, and it
forgets keys after a day. The ``client_token`` is part of the example (unique per annotator), so
``annotation.services.create_example`` itself is idempotent for every caller: the server-rendered form
(a double click, a retried POST), the API's create endpoint (whose token is derived from the
Idempotency-Key, ``annotation.api.client_token_of``) and replays (whose tokens are derived from the
source row), for as long as the example exists. The two meet on the API's create endpoint: a retry that
takes over the key of a worker that died after its commit finds the example through the token instead
of writing it again (docs/architecture.md, "Where does this rule live", idempotency).
"""

from __future__ import annotations

import functools
import hashlib
import json
from datetime import timedelta

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.datastructures import MultiValueDict
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import exceptions, status
from rest_framework.response import Response

from core.models import IdempotencyRecord

HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
MAX_KEY_LENGTH = 255
# Headers of the first response that a replay repeats: where the created resource is.
REPLAYED_RESPONSE_HEADERS = ("Location",)

KEY_PARAMETER = OpenApiParameter(
    name=HEADER,
    type={"type": "string", "minLength": 1, "maxLength": MAX_KEY_LENGTH, "pattern": "^[ -~]+$"},
    location=OpenApiParameter.HEADER,
    required=False,
    description=(
        "Optional, 1-255 printable ASCII characters (e.g. a UUID). Sending the same key again (same "
        "caller, same request) replays the first response instead of running the request twice; "
        "409 while the first is still running, 422 if the key was used for another request."
    ),
)


class IdempotencyConflict(exceptions.APIException):
    """409: a request with this key is still being processed."""

    status_code = status.HTTP_409_CONFLICT
    default_detail = "A request with this Idempotency-Key is still being processed; retry later."
    default_code = "idempotency_in_progress"


class IdempotencyKeyReused(exceptions.APIException):
    """422: the key was already used for a different request."""

    status_code = status.HTTP_422_UNPROCESSABLE_ENTITY
    default_detail = (
        "This Idempotency-Key was already used for a different request (another body, endpoint or "
        "method). Use a new key for a new request."
    )
    default_code = "idempotency_key_reused"


def _stale_after() -> timedelta:
    return timedelta(seconds=getattr(settings, "DYNABENCH_IDEMPOTENCY_STALE_SECONDS", 300))


def _ttl() -> timedelta:
    return timedelta(seconds=getattr(settings, "DYNABENCH_IDEMPOTENCY_TTL_SECONDS", 86_400))


def clean_key(raw: str) -> str:
    """The key as sent, if it is 1-255 printable ASCII characters (space to ``~``).

    Raises:
        rest_framework.exceptions.ValidationError: ``{"Idempotency-Key": [message]}`` (400).
    """
    if not raw or len(raw) > MAX_KEY_LENGTH or any(not (" " <= c <= "~") for c in raw):
        raise exceptions.ValidationError(
            {HEADER: [f"Must be 1 to {MAX_KEY_LENGTH} printable ASCII characters, e.g. a UUID."]}
        )
    return raw


def _canonical(value):
    """A JSON-serialisable, order-independent form of parsed request data (files by content hash)."""
    if isinstance(value, MultiValueDict):
        return {str(k): [_canonical(v) for v in value.getlist(k)] for k in sorted(value.keys())}
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    if isinstance(value, UploadedFile):
        digest = hashlib.sha256()
        for chunk in value.chunks():
            digest.update(chunk)
        value.seek(0)
        return {"file": value.name, "size": value.size, "sha256": digest.hexdigest()}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def fingerprint(request) -> str:
    """SHA-256 (hex) of the request's method, path and canonical parsed body.

    Raises:
        rest_framework.exceptions.ParseError: an unreadable body (the caller gets the 400 as usual).
    """
    document = [request.method, request.path, _canonical(request.data)]
    encoded = json.dumps(document, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(encoded.encode("utf-8", "surrogatepass")).hexdigest()


def _claim(user, key: str, method: str, path: str, print_: str) -> IdempotencyRecord:
    """Reserve ``(user, key)`` for this request, or raise / return what a duplicate must get.

    Returns:
        A record in state ``in_progress`` owned by this request (new, or taken over when stale), or a
        ``done`` record whose response must be replayed.

    Raises:
        IdempotencyKeyReused: the key belongs to a different request.
        IdempotencyConflict: the first request with the key is still running.
    """
    for _attempt in range(3):
        try:
            with transaction.atomic():  # a savepoint: a lost insert race must not break an outer transaction
                return IdempotencyRecord.objects.create(
                    user=user, key=key, method=method, path=path[:2000], fingerprint=print_
                )
        except IntegrityError:
            pass
        existing = IdempotencyRecord.objects.filter(user=user, key=key).first()
        if existing is None:
            continue  # released between our insert and our read: try the insert again
        now = timezone.now()
        if existing.created_at < now - _ttl() and (
            existing.state == IdempotencyRecord.State.DONE or existing.updated_at < now - _stale_after()
        ):
            IdempotencyRecord.objects.filter(pk=existing.pk, updated_at=existing.updated_at).delete()
            continue
        if existing.fingerprint != print_:
            raise IdempotencyKeyReused()
        if existing.state == IdempotencyRecord.State.DONE:
            return existing
        if existing.updated_at < now - _stale_after():
            # The first request's worker died; a conditional update lets exactly one retry take over.
            taken = IdempotencyRecord.objects.filter(pk=existing.pk, updated_at=existing.updated_at).update(
                updated_at=now
            )
            if taken:
                existing.updated_at = now
                return existing
        raise IdempotencyConflict()
    raise IdempotencyConflict()


def _release(record: IdempotencyRecord) -> None:
    IdempotencyRecord.objects.filter(pk=record.pk, state=IdempotencyRecord.State.IN_PROGRESS).delete()


def _store(record: IdempotencyRecord, response) -> bool:
    """Keep the response for replays; False (and the key released) when it cannot be stored as JSON."""
    try:
        json.dumps(response.data, cls=IdempotencyRecord._meta.get_field("response_body").encoder)
    except (TypeError, ValueError):
        _release(record)
        return False
    IdempotencyRecord.objects.filter(pk=record.pk).update(
        state=IdempotencyRecord.State.DONE,
        response_status=response.status_code,
        response_body=response.data,
        response_headers={
            name: response[name] for name in REPLAYED_RESPONSE_HEADERS if response.has_header(name)
        },
        updated_at=timezone.now(),
    )
    return True


def replay(record: IdempotencyRecord) -> Response:
    """The stored response of a finished request (with its ``REPLAYED_RESPONSE_HEADERS``), marked as a replay."""
    headers = {**(record.response_headers or {}), REPLAYED_HEADER: "true"}
    return Response(record.response_body, status=record.response_status, headers=headers)


def idempotent(handler):
    """Decorate a DRF handler (``post``, ``create`` or an ``@action`` method) to honour ``Idempotency-Key``.

    Runs after DRF's authentication, permission and throttle checks (they happen before any handler),
    so a refused request neither uses up nor needs a key. See the module docstring for the rules.
    """

    @functools.wraps(handler)
    def wrapper(view, request, *args, **kwargs):
        raw = request.headers.get(HEADER)
        if raw is None or not request.user.is_authenticated:
            return handler(view, request, *args, **kwargs)
        key = clean_key(raw)
        record = _claim(request.user, key, request.method, request.path, fingerprint(request))
        if record.state == IdempotencyRecord.State.DONE:
            return replay(record)
        try:
            response = handler(view, request, *args, **kwargs)
        except BaseException:
            _release(record)
            raise
        if response.status_code >= 500 or not hasattr(response, "data"):
            _release(record)
        else:
            _store(record, response)
        return response

    return extend_schema(parameters=[KEY_PARAMETER])(wrapper)


class IdempotentCreateMixin:
    """For views with DRF's ``CreateModelMixin``: ``create`` honours ``Idempotency-Key``."""

    @idempotent
    def create(self, request, *args, **kwargs):
        return super().create(request, *args, **kwargs)
