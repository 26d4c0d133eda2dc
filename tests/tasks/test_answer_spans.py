"""Answer spans in code points: emoji, ZWJ sequences, combining accents, Arabic, Hebrew, CRLF."""

from __future__ import annotations

import pytest

from core.spans import (
    Span,
    SpanError,
    code_points_from_utf16,
    normalise_with_offsets,
    remap_span,
    resolve_answer,
    snap_to_graphemes,
    utf16_from_code_points,
)

FAMILY = "\U0001f468\u200d\U0001f469\u200d\U0001f467"  # man ZWJ woman ZWJ girl: 5 code points, 8 UTF-16 units
THUMBS_DARK = "\U0001f44d\U0001f3ff"  # thumbs up + dark skin tone: 2 code points, one character


def test_plain_answer_found_at_first_occurrence():
    passage = "Paris is in France. Paris is big."
    assert resolve_answer(passage, "Paris") == Span(0, 5, "Paris")
    assert resolve_answer(passage, "Paris", 20) == Span(20, 25, "Paris")


def test_offsets_after_an_astral_emoji_count_one_per_code_point():
    passage = "🎉 Party at Noon 🎉 then home"
    span = resolve_answer(passage, "Noon")
    # "🎉" is one code point (two UTF-16 units): "🎉 Party at " is 11 code points
    assert span.start == 11 and passage[11:15] == "Noon"
    assert resolve_answer(passage, "Noon", 11).start == 11
    assert resolve_answer(passage, "home", None).start == 23


def test_answer_that_is_a_zwj_sequence():
    passage = f"The family {FAMILY} arrived."
    span = resolve_answer(passage, FAMILY)
    assert (span.start, span.end) == (11, 16)
    assert passage[span.start : span.end] == FAMILY


def test_answer_that_cuts_a_zwj_sequence_is_refused():
    passage = f"The family {FAMILY} arrived."
    man = "\U0001f468"
    with pytest.raises(SpanError, match="cuts a character"):
        resolve_answer(passage, man, 11)
    # searching never returns a half character either, and says why it found none
    with pytest.raises(SpanError, match="occurs in the passage only inside a longer character"):
        resolve_answer(passage, man)


def test_skin_tone_modifier_stays_with_its_emoji():
    passage = f"Votes: {THUMBS_DARK} and \U0001f44d alone"
    # the bare thumbs up inside the modified one is not a whole character; the later one is
    span = resolve_answer(passage, "\U0001f44d")
    assert span.start == len("Votes: ") + 2 + len(" and ")


def test_combining_accent_belongs_to_its_letter():
    passage = "Cafe\u0301 du Monde and cafe"  # "Café" written with U+0301 COMBINING ACUTE ACCENT
    with pytest.raises(SpanError, match="cuts a character"):
        resolve_answer(passage, "Cafe", 0)
    span = resolve_answer(passage, "Cafe\u0301 du Monde")
    assert (span.start, span.end) == (0, 14)
    # the lower-case "cafe" at the end is a whole word: found, not the accented one
    assert resolve_answer(passage, "cafe").start == 19


def test_arabic_offsets_are_logical_order():
    passage = "قال الرئيس إن المدينة جميلة"
    span = resolve_answer(passage, "المدينة")
    assert (span.start, span.end) == (14, 21)
    assert passage[14:21] == "المدينة"


def test_hebrew_with_latin_and_digits_mixed():
    passage = "הכנס נערך ב-Tel Aviv בשנת 2019 עם 300 משתתפים"
    assert resolve_answer(passage, "2019").start == passage.index("2019") == 26
    assert resolve_answer(passage, "Tel Aviv").start == 12
    span = resolve_answer(passage, "משתתפים")
    assert passage[span.start : span.end] == "משתתפים" and span.end == len(passage)


def test_surrounding_whitespace_of_a_selection_is_trimmed_and_offset_moved():
    passage = "Answer is forty two today"
    span = resolve_answer(passage, " forty two ", 9)
    assert span == Span(10, 19, "forty two")


def test_answer_not_in_passage_is_a_clear_error():
    with pytest.raises(SpanError, match="does not occur in the passage"):
        resolve_answer("Some passage", "absent")


def test_wrong_offset_names_where_the_answer_is():
    with pytest.raises(SpanError, match="not at offset 2 .*first occurs at offset 5"):
        resolve_answer("abcd answer", "answer", 2)


@pytest.mark.parametrize("bad", [-1, 100, True, "3", 2.0])
def test_bad_offsets(bad):
    with pytest.raises(SpanError):
        resolve_answer("short text", "text", bad)


@pytest.mark.parametrize("blank", ["", "   ", "\r\n"])
def test_empty_answer(blank):
    with pytest.raises(SpanError, match="Select the answer"):
        resolve_answer("short text", blank)


def test_crlf_in_source_maps_to_the_normalised_text():
    raw = "line one\r\nline two\r\n\r\nthird 😀 line\rend"
    normalised, mapping = normalise_with_offsets(raw)
    assert normalised == "line one\nline two\n\nthird 😀 line\nend"
    assert len(mapping) == len(raw) + 1
    start = raw.index("third")
    text, s, e = remap_span(raw, start, start + len("third 😀 line"))
    assert text == normalised and normalised[s:e] == "third 😀 line"
    assert (s, e) == (19, 31)  # three CRLFs before it became three LFs: 22 - 3
    s, e = remap_span(raw, raw.index("end"), len(raw))[1:]
    assert normalised[s:e] == "end"


def test_crlf_answer_matches_the_normalised_passage():
    passage = "first\nsecond line"
    span = resolve_answer(passage, "first\r\nsecond")
    assert span == Span(0, 12, "first\nsecond")


def test_utf16_offsets_of_a_browser_selection():
    passage = f"a{FAMILY}b 🎉 مرحبا"
    # in JS: "a" 1 unit, family 8 units, "b" at unit 9
    assert code_points_from_utf16(passage, 9) == 6
    assert utf16_from_code_points(passage, 6) == 9
    # the middle of a surrogate pair falls back to the start of its character
    assert code_points_from_utf16(passage, 2) == 1
    for cp in range(len(passage) + 1):
        assert code_points_from_utf16(passage, utf16_from_code_points(passage, cp)) == cp
    assert code_points_from_utf16(passage, len(passage.encode("utf-16-le")) // 2) == len(passage)
    with pytest.raises(SpanError):
        code_points_from_utf16(passage, 1000)


def test_snap_widens_to_whole_characters():
    passage = f"x Cafe\u0301 {FAMILY} y"
    # a tokenizer span "Cafe" (2..6) ends before the accent: snapped to include it
    assert snap_to_graphemes(passage, 2, 6) == (2, 7)
    # half a ZWJ sequence becomes the whole family
    assert snap_to_graphemes(passage, 8, 9) == (8, 13)
    assert snap_to_graphemes(passage, 0, 1) == (0, 1)
    assert snap_to_graphemes(passage, 0, len(passage) + 5) == (0, len(passage))


def test_a_typed_answer_is_the_whole_word_not_the_inside_of_a_longer_one():
    passage = "He took command of the ship; the man at the helm obeyed."
    span = resolve_answer(passage, "man")
    assert (span.start, span.end) == (33, 36)  # "the man", not "com-man-d" at 11
    assert passage[span.start - 4 : span.end] == "the man"
    # With no whole-word occurrence the first one is still taken (the annotator typed it on purpose).
    assert resolve_answer("He took command.", "man").start == 11
    # Right-to-left and accented words count as words: "של" inside "שלום" is skipped.
    hebrew = "שלום של"
    assert resolve_answer(hebrew, "של").start == 5


def test_an_offset_inside_the_passage_with_an_answer_running_past_its_end():
    passage = "x" * 65 + " the answer!"  # 77 code points
    with pytest.raises(SpanError) as info:
        resolve_answer(passage, "the answer!!", 66)
    assert str(info.value) == "The answer at offset 66 runs past the end of the passage (77 characters)."
    with pytest.raises(SpanError) as info:
        resolve_answer(passage, "x", 77)
    assert str(info.value) == "The answer's offset 77 is outside the passage (77 characters)."


def test_a_typed_answer_that_would_cut_an_accent_says_so():
    with pytest.raises(SpanError, match="only inside a longer character"):
        resolve_answer("Jose\u0301 Mari\u0301a", "Jose")


def test_source_offset_inverts_the_newline_normalisation():
    from core.spans import source_offset

    text = "a\r\nb\rc\nd🙂e"
    normalised = "a\nb\nc\nd🙂e"
    for n, char in enumerate(normalised):
        s = source_offset(text, n)
        assert text[s] == ("\r" if char == "\n" and text[s] in "\r" else char)
    assert [source_offset(text, n) for n in range(len(normalised) + 1)] == [0, 1, 3, 4, 5, 6, 7, 8, 9, 10]
    assert source_offset(text, 99) == len(text)
    with pytest.raises(ValueError):
        source_offset(text, -1)
