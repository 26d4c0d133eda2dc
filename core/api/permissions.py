"""Who may do what through the API (every case is pinned in tests/dynabench/test_api_permission_table.py).

Reads of tasks and rounds are public. Annotating and validating need a signed-in, active, unblocked
user: anonymous callers get 401 (with ``WWW-Authenticate: Token``), blocked ones 403. Objects a caller
may not see are filtered out of querysets by the views (404); writes on an object the caller can see
but may not change are refused with 403 by the views.
"""

from __future__ import annotations

from rest_framework.permissions import BasePermission, IsAuthenticated


def can_contribute(user) -> bool:
    """True for a signed-in user whose ``can_contribute`` holds (``accounts.User.can_contribute``: active
    and not blocked); False for anonymous visitors and None."""
    return bool(user is not None and user.is_authenticated and user.can_contribute)


class IsContributor(BasePermission):
    """Signed in (else 401) and not blocked (else 403): may write examples and validate."""

    message = "Your account is blocked from writing examples and validating."

    def has_permission(self, request, view) -> bool:
        return IsAuthenticated().has_permission(request, view) and can_contribute(request.user)


class IsContributorForWrites(IsContributor):
    """Signed in for every method; writes (POST etc.) additionally need an unblocked account."""

    def has_permission(self, request, view) -> bool:
        if request.method in ("GET", "HEAD", "OPTIONS"):
            return IsAuthenticated().has_permission(request, view)
        return super().has_permission(request, view)
