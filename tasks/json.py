"""The JSON encoder of every JSONField in the project."""

from django.core.serializers.json import DjangoJSONEncoder


class UnicodeJSONEncoder(DjangoJSONEncoder):
    """``DjangoJSONEncoder`` that writes text as itself, not as ``\\uXXXX`` escapes.

    Why: on SQLite (the demo's database) a JSONField is stored as the encoded text, and Django's
    ``icontains`` searches that text, so with escapes an admin search for "🐍" or "عربي" finds
    nothing. PostgreSQL's jsonb is unaffected either way.
    """

    def __init__(self, *args, **kwargs):
        kwargs["ensure_ascii"] = False
        super().__init__(*args, **kwargs)
