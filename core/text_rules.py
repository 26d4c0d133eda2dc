"""Rules for text users send, shared by every app: one newline normalisation, refused characters
(control characters and bidi overrides in example texts, explanations, reasons and model names), what
counts as a visible character, ids typed in a query or form field (ASCII digits only), and query
parameters given more than once."""

from __future__ import annotations

import re
import unicodedata

import regex

#: Bidi overrides force a display order other than the stored one, so a reader and a model would see
#: different texts (the "Trojan Source" trick). Marks (U+200E/F, U+061C) and isolates are not here:
#: they only help right-to-left and mixed text display as written.
BIDI_OVERRIDES = frozenset({"\u202d", "\u202e"})

#: A number typed in a query, form or path field: ASCII digits only. ``str.isdigit`` is true for '²'
#: or Arabic-Indic digits, which ``int()`` rejects or reads as another number.
_DIGITS = re.compile(r"[0-9]+")


def ascii_id(raw: str | None, *, max_digits: int = 9) -> int | None:
    """``raw`` as an int when it is 1 to ``max_digits`` ASCII digits (``"12"`` -> 12), else None.

    The one parser of ids and counts sent as text. Never raises: the length is checked before ``int()``,
    which raises on thousands of digits. No sign, space, underscore or decimal point is accepted.
    """
    if isinstance(raw, str) and len(raw) <= max_digits and _DIGITS.fullmatch(raw):
        return int(raw)
    return None


def normalise_newlines(text: str) -> str:
    """CRLF and lone CR become LF; nothing else changes (emoji, ZWJ, tag characters, RTL marks, spaces).

    The one newline normalisation of the platform: forms post CRLF, files and API clients may send
    either, and offsets into a passage must mean the same characters everywhere.
    """
    return text.replace("\r\n", "\n").replace("\r", "\n")


# Characters of a letter/symbol category that nevertheless render as blank space.
BLANK_LOOKING = frozenset({"\u2800", "\u3164", "\u115f", "\u1160", "\uffa0"})


_ALLOWED_CONTROLS = frozenset({"\n", "\t"})


def first_control_character(value: str) -> str | None:
    """The first C0/C1 control character (category Cc) other than LF and tab, or bidi override
    (U+202D, U+202E) of ``value``; None when there is none.

    Call it on normalised text (``normalise_newlines``): a CR has become LF by then.
    """
    for char in value:
        if char in BIDI_OVERRIDES or (char not in _ALLOWED_CONTROLS and unicodedata.category(char) == "Cc"):
            return char
    return None


def control_character_message(label: str, char: str) -> str:
    """The error for a text field that contains the control character or bidi override ``char``."""
    if char in BIDI_OVERRIDES:
        return (
            f"{label} contains U+{ord(char):04X} {unicodedata.name(char)}, which shows the text in another "
            "order than it is stored; remove it and send again (right-to-left text itself is fine)."
        )
    return f"{label} contains the control character U+{ord(char):04X}; remove it and send again."


def has_visible_character(value: str) -> bool:
    """True if ``value`` has a character that shows: a letter, number, punctuation or symbol (emoji).

    Zero-width spaces, joiners, byte-order marks, lone combining marks and blank-looking letters such as
    U+2800 BRAILLE PATTERN BLANK or U+3164 HANGUL FILLER do not count.
    """
    return any(unicodedata.category(char)[0] in "LNPS" and char not in BLANK_LOOKING for char in value)


def no_visible_character_message(label: str) -> str:
    """The error for a text field whose characters are all invisible or blank-looking."""
    return (
        f"{label} has no visible character; write something visible "
        "(letters, digits, punctuation or emoji), not only invisible or blank characters."
    )


def too_long_message(label: str, length: int, limit: int) -> str:
    """E.g. ``"The text is too long: 2,001 characters, at most 2,000 allowed."`` (lengths in code points,
    counted after CRLF becomes LF)."""
    return f"{label} is too long: {length:,} characters, at most {limit:,} allowed."


def model_text_problem(value: str, label: str, limit: int | None = None) -> str | None:
    """The problem of a text a model is to read (already normalised, not blank), or None: a control
    character or bidi override (``first_control_character``), no visible character, or more than
    ``limit`` code points. The create page, the model page's "try it" box and the predict API refuse the
    same texts with the same messages."""
    char = first_control_character(value)
    if char is not None:
        return control_character_message(label, char)
    if not has_visible_character(value):
        return no_visible_character_message(label)
    if limit is not None and len(value) > limit:
        return too_long_message(label, len(value), limit)
    return None


def check_free_text(value: str, label: str, limit: int) -> str | None:
    """The one error of an optional free text (explanation, flag reason) already normalised, or None."""
    char = first_control_character(value)
    if char is not None:
        return control_character_message(label, char)
    if len(value) > limit:
        return too_long_message(label, len(value), limit)
    return None


def repeated_parameters(query) -> dict[str, int]:
    """``{name: times given}`` of the parameters a query (a ``QueryDict``, or anything with ``getlist``)
    gives more than once, by name; ``{}`` for a plain dict. Django hands a view the last value of a
    repeated parameter, silently dropping the others, so the API and the filter sets refuse them."""
    if not hasattr(query, "getlist"):
        return {}
    counts = {name: len(query.getlist(name)) for name in query}
    return {name: count for name, count in sorted(counts.items()) if count > 1}


def repeated_parameter_message(count: int) -> str:
    """The one wording of that refusal."""
    return f"Give this parameter once; it was given {count} times."


def truncate_graphemes(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` user-perceived characters (grapheme clusters, ``regex``'s
    ``\\X``), ending in "…" when cut, so that an emoji sequence (👨‍👩‍👧, 🏳️‍🌈, 👍🏽) or a letter with
    combining accents is kept whole or left out, never shown as a part the author did not write.
    The "…" counts in ``limit`` as in Django's ``truncatechars``. ``limit`` < 1 gives "".

    Django's ``truncatechars`` counts code points: 🏳️‍🌈 (4 of them) cut after the first shows 🏳️.
    """
    if limit < 1:
        return ""
    if len(text) <= limit:  # a cluster is at least one code point: nothing to cut
        return text
    clusters = regex.findall(r"\X", text)
    if len(clusters) <= limit:
        return text
    return "".join(clusters[: limit - 1]) + "…"


def lone_surrogate_path(data) -> str | None:
    """Where in parsed JSON ``data`` a string (a value or a key) holds a lone surrogate, e.g.
    ``"metadata.note"`` or ``"inputs[2]"``; None when there is none.

    JSON may spell a lone surrogate (``"\\ud800"``); Python decodes it into a ``str`` that cannot be
    encoded as UTF-8, so it could never be stored or shown. Walked with a stack, not recursion.
    """
    stack = [("", data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return path or "the body"
        elif isinstance(value, dict):
            for key, item in value.items():
                where = f"{path}.{key}" if path else str(key)
                try:
                    key.encode("utf-8")
                except UnicodeEncodeError:
                    return f"a key of {path}" if path else "a key of the body"
                stack.append((where, item))
        elif isinstance(value, list):
            stack.extend((f"{path}[{i}]", item) for i, item in enumerate(value))
    return None
