"""Authentication of the OpenAI-compatible endpoint: the user's DRF API token as a bearer token."""

from __future__ import annotations

from rest_framework.authentication import TokenAuthentication


class BearerTokenAuthentication(TokenAuthentication):
    """``Authorization: Bearer <token>`` (what OpenAI clients send), the key of the user's DRF
    ``authtoken``; ``Authorization: Token <token>``, as on ``/api/``, works too.

    No session: the endpoint is for programs, so a signed-in browser tab cannot be made to call it
    (no CSRF to guard). A missing header is anonymous (the view answers 401); a malformed or unknown
    token, or an inactive user's, raises ``AuthenticationFailed`` (401).
    """

    keyword = "Bearer"

    def authenticate(self, request):
        """``(user, token)``, or None when the header is absent or of another scheme."""
        header = request.META.get("HTTP_AUTHORIZATION", "")
        scheme = header.split(" ", 1)[0].lower()
        if scheme == "token":
            return TokenAuthentication().authenticate(request)
        return super().authenticate(request)
