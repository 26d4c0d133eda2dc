"""Character rules shared by every app that takes free text (examples, model names)."""

from __future__ import annotations

#: Bidi overrides force a display order other than the stored one, so a reader and a model would see
#: different texts (the "Trojan Source" trick). Marks (U+200E/F, U+061C) and isolates are not here:
#: they only help right-to-left and mixed text display as written.
BIDI_OVERRIDES = frozenset({"\u202d", "\u202e"})
