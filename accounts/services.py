"""Writes for accounts: the user's API token (DRF ``authtoken``)."""

from __future__ import annotations

from django.db import transaction
from rest_framework.authtoken.models import Token


@transaction.atomic
def api_token_for(user, *, regenerate: bool = False) -> Token:
    """The user's API token, created on first use; ``regenerate`` replaces it (the old one stops working).

    The same key ``python manage.py drf_create_token USERNAME`` prints (``-r`` regenerates).
    """
    if regenerate:
        Token.objects.filter(user=user).delete()
    token, _created = Token.objects.get_or_create(user=user)
    return token
