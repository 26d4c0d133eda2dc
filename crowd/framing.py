"""MTurk shows an ExternalQuestion HIT in a frame on its own site, which the site's headers forbid
(``X-Frame-Options: DENY``, CSP ``frame-ancestors 'none'``). Crowd pages, and every page of a worker who
entered through an MTurk study's link (a flag in their server-side session, set by the entry page), may
be framed by MTurk's two sites, and nothing else; the completion page may also post to them.
"""

from __future__ import annotations

from functools import wraps

from .links import MTURK_SUBMIT_HOSTS

#: Set in the session of a worker who entered through an MTurk link (cleared with the session on logout).
SESSION_FLAG = "crowd_mturk_frame"


def allow_mturk_framing(response):
    """Let MTurk frame ``response`` and post forms to MTurk (django-csp reads ``_csp_replace``/``_csp_update``;
    Django's clickjacking middleware ``xframe_options_exempt``)."""
    response.xframe_options_exempt = True
    response._csp_replace = {
        **(getattr(response, "_csp_replace", None) or {}),
        "frame-ancestors": list(MTURK_SUBMIT_HOSTS),
    }
    update = dict(getattr(response, "_csp_update", None) or {})
    update["form-action"] = [*update.get("form-action", []), *MTURK_SUBMIT_HOSTS]
    response._csp_update = update
    return response


def crowd_page(view):
    """A crowd page (entry, consent, completion, return): framable by MTurk and posting to it."""

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        return allow_mturk_framing(view(request, *args, **kwargs))

    return wrapped


class MTurkFramingMiddleware:
    """Every page of an MTurk worker (session flag ``SESSION_FLAG``) may be framed by MTurk: the create and
    validate pages are in the HIT's frame too. Listed after Django's ``XFrameOptionsMiddleware`` and
    django-csp's middleware, so both read what it sets."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        session = getattr(request, "session", None)
        if session is not None and session.get(SESSION_FLAG):
            allow_mturk_framing(response)
        return response
