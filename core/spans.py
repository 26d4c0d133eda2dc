"""Answer spans of a passage, in code points (extractive QA; docs/domain.md, "Example").

A span target is stored as ``{"answer": str, "answer_start": int}`` where ``answer_start`` is a
**code-point** offset into the stored passage: a Python ``str`` index, so that
``passage[answer_start : answer_start + len(answer)] == answer``. The stored passage is the
normalised one (CRLF and lone CR became LF when the context was loaded), so offsets always refer to
that text, never to the file it came from (``normalise_with_offsets`` remaps a source offset).

Browsers count in UTF-16 code units: an emoji outside the Basic Multilingual Plane is one code point
but two units. ``code_points_from_utf16`` converts (the create page's script does the same in JS).

A span never cuts a user-perceived character in two: its ends must lie on extended grapheme cluster
boundaries (Unicode UAX #29, via the ``regex`` module's ``\\X``), so an answer cannot end between a
letter and its combining accent, inside an emoji ZWJ sequence, or between an emoji and its skin-tone
modifier. Right-to-left text needs nothing special: offsets are logical (storage order), not visual.
"""

from __future__ import annotations

import bisect
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

import regex

from core.text_rules import normalise_newlines

_GRAPHEME = regex.compile(r"\X")


class SpanError(ValueError):
    """The answer is not a usable span of the passage; ``str(error)`` is the message for the annotator."""


@dataclass(frozen=True)
class Span:
    """A span ``text == passage[start:end]``, offsets in code points (end exclusive)."""

    start: int
    end: int
    text: str

    def as_target(self) -> dict:
        """The stored target: ``{"answer": text, "answer_start": start}``."""
        return {"answer": self.text, "answer_start": self.start}


def normalise_with_offsets(text: str) -> tuple[str, list[int]]:
    """Normalise newlines and map every source offset to the normalised text.

    Returns:
        ``(normalised, mapping)`` with ``len(mapping) == len(text) + 1``: ``mapping[i]`` is the offset in
        ``normalised`` of source offset ``i``; a span ``[s, e)`` of the source becomes
        ``[mapping[s], mapping[e])`` (the LF of a CRLF maps just after the single LF both became).
    """
    out: list[str] = []
    mapping: list[int] = []
    i = 0
    while i < len(text):
        char = text[i]
        mapping.append(len(out))
        if char == "\r":
            out.append("\n")
            if i + 1 < len(text) and text[i + 1] == "\n":
                mapping.append(len(out))  # the LF of a CRLF: just after the one "\n" written for both
                i += 2
                continue
        else:
            out.append(char)
        i += 1
    mapping.append(len(out))
    return "".join(out), mapping


def source_offset(text: str, normalised_offset: int) -> int:
    """The offset in ``text`` (as sent, with CRLF or lone CR) of ``normalised_offset`` into
    ``normalise_newlines(text)``: the inverse of ``normalise_with_offsets``' mapping (a CRLF's one LF maps
    to its CR). An offset past the end maps to ``len(text)``.

    Raises:
        ValueError: a negative offset.
    """
    if normalised_offset < 0:
        raise ValueError("an offset cannot be negative")
    _, mapping = normalise_with_offsets(text)
    for source in range(len(text)):
        if text[source] == "\n" and source and text[source - 1] == "\r":
            continue  # the LF of a CRLF: its CR already stands for the one LF both became
        if mapping[source] >= normalised_offset:
            return source
    return len(text)


def remap_span(text: str, start: int, end: int) -> tuple[str, int, int]:
    """``(normalised_text, start', end')`` for a span ``[start, end)`` given against un-normalised ``text``.

    Raises:
        SpanError: if the offsets are outside ``text``.
    """
    if not 0 <= start <= end <= len(text):
        raise SpanError(f"span [{start}, {end}) is outside a text of {len(text)} characters")
    normalised, mapping = normalise_with_offsets(text)
    return normalised, mapping[start], mapping[end]


def code_points_from_utf16(text: str, utf16_offset: int) -> int:
    """The code-point offset of a UTF-16 offset into ``text`` (what a browser's selection reports).

    An offset that falls between the two halves of a surrogate pair is moved back to the start of
    that character.

    Raises:
        SpanError: if the offset is negative or beyond the text.
    """
    if utf16_offset < 0:
        raise SpanError("offsets cannot be negative")
    units = 0
    for index, char in enumerate(text):
        if units >= utf16_offset:
            return index
        width = 2 if ord(char) > 0xFFFF else 1
        if units + width > utf16_offset:  # inside a surrogate pair
            return index
        units += width
    if units >= utf16_offset:
        return len(text)
    raise SpanError(f"offset {utf16_offset} is beyond the passage ({units} UTF-16 units)")


def utf16_from_code_points(text: str, offset: int) -> int:
    """The UTF-16 offset of code-point ``offset`` into ``text`` (for a script that highlights a span)."""
    return sum(2 if ord(char) > 0xFFFF else 1 for char in text[:offset])


@lru_cache(maxsize=64)
def grapheme_boundaries(text: str) -> tuple[int, ...]:
    """Sorted code-point offsets where an extended grapheme cluster starts, plus ``len(text)``."""
    bounds = [m.start() for m in _GRAPHEME.finditer(text)]
    bounds.append(len(text))
    return tuple(bounds)


def on_boundary(text: str, offset: int) -> bool:
    """True if ``offset`` does not fall inside a grapheme cluster of ``text``."""
    bounds = grapheme_boundaries(text)
    i = bisect.bisect_left(bounds, offset)
    return i < len(bounds) and bounds[i] == offset


def snap_to_graphemes(text: str, start: int, end: int) -> tuple[int, int]:
    """Widen ``[start, end)`` to whole grapheme clusters: start moves left, end moves right.

    Used on a model's decoded span: a tokenizer drops combining accents and splits ZWJ sequences, so a
    token boundary may fall inside a character as the reader sees it.
    """
    bounds = grapheme_boundaries(text)
    start = max(0, min(start, len(text)))
    end = max(start, min(end, len(text)))
    i = bisect.bisect_right(bounds, start) - 1
    j = bisect.bisect_left(bounds, end)
    return bounds[max(i, 0)], bounds[min(j, len(bounds) - 1)]


def strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    """Move ``start`` right and ``end`` left past white space (a mouse selection often takes a space)."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _occurrences(text: str, part: str):
    """Every code-point offset where ``part`` occurs in ``text``, overlapping ones included."""
    position = text.find(part)
    while position != -1:
        yield position
        position = text.find(part, position + 1)


def _is_word_character(char: str) -> bool:
    return unicodedata.category(char)[0] in "LNM"


def _whole_word(text: str, start: int, end: int) -> bool:
    """True when ``text[start:end]`` is not glued to a letter, digit or mark on either side."""
    before = start == 0 or not _is_word_character(text[start - 1]) or not _is_word_character(text[start])
    after = end == len(text) or not _is_word_character(text[end]) or not _is_word_character(text[end - 1])
    return before and after


def resolve_answer(passage: str, answer: str, answer_start: int | None = None) -> Span:
    """The span of ``passage`` an annotator means by ``answer`` (and optionally its offset).

    ``answer`` is newline-normalised and stripped of surrounding white space (``answer_start`` moves
    with the leading white space removed). With ``answer_start`` the answer must be at that code-point
    offset; without it the first occurrence that starts and ends on grapheme boundaries and is a whole
    word there (no letter, digit or mark glued on either side: ``man`` in "the man", not in "command")
    is taken, else the first occurrence on grapheme boundaries.

    Args:
        passage: the stored (already normalised) passage.
        answer: the answer text as selected or typed.
        answer_start: code-point offset into ``passage``, or None to search.

    Returns:
        The ``Span``.

    Raises:
        SpanError: empty answer, a non-integer or out-of-range offset, an answer that is not at its
            offset, not in the passage at all, or that cuts a character (grapheme cluster) in two.
    """
    answer = normalise_newlines(answer)
    stripped = answer.strip()
    if not stripped:
        raise SpanError("Select the answer in the passage, or type it exactly as it appears there.")
    if answer_start is None:
        whole = [(p, p + len(stripped)) for p in _occurrences(passage, stripped)]
        whole = [(a, b) for a, b in whole if on_boundary(passage, a) and on_boundary(passage, b)]
        if whole:
            # "man" typed for a passage with "command ... the man": the word, not the inside of "command".
            a, b = next((span for span in whole if _whole_word(passage, *span)), whole[0])
            return Span(a, b, stripped)
        if passage.find(stripped) != -1:
            raise SpanError(
                "The answer occurs in the passage only inside a longer character (an accent, emoji "
                "sequence or similar); select it in the passage, with whole characters."
            )
        raise SpanError(
            "The answer does not occur in the passage; select it in the passage or copy it exactly."
        )
    if isinstance(answer_start, bool) or not isinstance(answer_start, int):
        raise SpanError("The answer's offset must be a whole number of characters.")
    start = answer_start + (len(answer) - len(answer.lstrip()))
    end = start + len(stripped)
    if answer_start < 0 or answer_start >= len(passage):
        raise SpanError(
            f"The answer's offset {answer_start} is outside the passage ({len(passage)} characters)."
        )
    if end > len(passage):
        raise SpanError(
            f"The answer at offset {answer_start} runs past the end of the passage "
            f"({len(passage)} characters)."
        )
    if passage[start:end] != stripped:
        hint = passage.find(stripped)
        where = f" (it first occurs at offset {hint})" if hint != -1 else " (it is not in the passage)"
        raise SpanError(f"The answer is not at offset {answer_start} of the passage{where}.")
    if not (on_boundary(passage, start) and on_boundary(passage, end)):
        raise SpanError(
            "The answer cuts a character in two (an accent, emoji sequence or similar); "
            "select whole characters."
        )
    return Span(start, end, stripped)
