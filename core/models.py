"""Project-wide models that belong to no single app: the API's idempotency records."""

from __future__ import annotations

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models


class IdempotencyRecord(models.Model):
    """One ``Idempotency-Key`` a caller sent with a POST, and the response it got (``core.api.idempotency``).

    ``fingerprint`` is the SHA-256 (hex) of the method, the path and the canonical request body, so the
    same key sent with another request is recognised. While the first request runs, ``state`` is
    ``in_progress`` and a duplicate gets 409; afterwards ``state`` is ``done`` and ``response_status``
    / ``response_body`` are replayed to any duplicate.
    """

    class State(models.TextChoices):
        IN_PROGRESS = "in_progress", "In progress"
        DONE = "done", "Done"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=255)
    method = models.CharField(max_length=10)
    path = models.CharField(max_length=2000)
    fingerprint = models.CharField(max_length=64)
    state = models.CharField(max_length=12, choices=State.choices, default=State.IN_PROGRESS)
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    response_body = models.JSONField(encoder=DjangoJSONEncoder, null=True, blank=True)
    # The headers a replay must carry too (``idempotency.REPLAYED_RESPONSE_HEADERS``), e.g. Location.
    response_headers = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "key"], name="idempotency_key_unique_per_user"),
        ]

    def __str__(self) -> str:
        return f"{self.method} {self.path} key {self.key!r} ({self.state})"
