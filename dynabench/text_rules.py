"""Rules for text users send, shared by every app: refused characters (example texts, model names) and
ids typed in a query or form field (ASCII digits only)."""

from __future__ import annotations

import re

#: Bidi overrides force a display order other than the stored one, so a reader and a model would see
#: different texts (the "Trojan Source" trick). Marks (U+200E/F, U+061C) and isolates are not here:
#: they only help right-to-left and mixed text display as written.
BIDI_OVERRIDES = frozenset({"\u202d", "\u202e"})

#: An id in a query or form field: ASCII digits only, at most 9 of them. ``str.isdigit`` is true for
#: '²' or Arabic-Indic digits, which ``int()`` rejects or reads as another id.
_ID_PATTERN = re.compile(r"[0-9]{1,9}")


def ascii_id(raw: str | None) -> int | None:
    """``raw`` as an int when it is 1 to 9 ASCII digits (``"12"`` -> 12), else None (never raises)."""
    if isinstance(raw, str) and _ID_PATTERN.fullmatch(raw):
        return int(raw)
    return None
