"""The rule for a registered model's name, shared by the API upload, the register and card forms and
the registration services: one line of printable text.

Letters of any script, digits, punctuation, symbols and emoji (with their joiners and variation
selectors) are allowed, as before; refused are control characters (Unicode category Cc: NUL, BEL, tab,
line feeds...), the line and paragraph separators U+2028 / U+2029, and the bidi overrides U+202D /
U+202E, which show a name in another order than it is stored. A name must also show something: one
letter, digit, punctuation mark or symbol that is not blank-looking (``text_rules.has_visible_character``,
the rule example texts follow: U+3164 HANGUL FILLER alone shows nothing).
"""

from __future__ import annotations

import unicodedata

from core.text_rules import BIDI_OVERRIDES, has_visible_character

#: Characters refused beyond category Cc (see the module docstring).
REFUSED = frozenset({"\u2028", "\u2029"}) | BIDI_OVERRIDES


def model_name_problem(name: str) -> str | None:
    """Why ``name`` (already stripped) cannot be a model's name, or None when it can.

    Returns e.g. ``"The name contains the control character U+0007; use printable characters."``.
    An empty name is left to the caller's "required" message.
    """
    for char in name:
        if char in REFUSED or unicodedata.category(char) == "Cc":
            what = "control character" if unicodedata.category(char) == "Cc" else "character"
            return f"The name contains the {what} U+{ord(char):04X}; use printable characters."
    if name and not has_visible_character(name):
        return "The name shows nothing: use at least one letter, digit, punctuation mark or symbol."
    return None
