"""The preprocessing stored with each model: emoji to names, NFKC, whitespace; pure and deterministic."""

from __future__ import annotations

import pytest

from engine.runtime.preprocessing import (
    DEFAULT_PREPROCESSING,
    NO_PREPROCESSING,
    PreprocessingError,
    preprocess,
    preprocess_all,
)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("I love 🐷", "I love pig face"),
        ("I love 🌹", "I love rose"),
        # ZWJ sequence: one family, not three people and two joiners.
        ("my 👨\u200d👩\u200d👧 is here", "my family man woman girl is here"),
        # Skin tone modifiers are part of the name.
        ("👍🏽", "thumbs up medium skin tone"),
        ("👨🏿 go home", "man dark skin tone go home"),
        # Regional-indicator flags.
        ("🇬🇧🇫🇷", "United Kingdom France"),
        # Rainbow flag: ZWJ + variation selector.
        ("proud 🏳️\u200d🌈", "proud rainbow flag"),
        # Keycap (digit + VS16 + combining enclosing keycap).
        ("number 1️⃣", "number keycap 1"),
        # Emoji glued to words get spaces around them.
        ("kill🔪them", "kill kitchen knife them"),
    ],
)
def test_emoji_become_their_names(raw, expected):
    assert preprocess(raw) == expected


def test_nfkc_and_whitespace():
    # Full-width letters, a ligature and non-breaking / odd spaces.
    assert preprocess("Ｈｅｌｌｏ\u00a0\u2003 ﬁne\t\n world  ") == "Hello fine world"


def test_right_to_left_text_is_kept_in_order():
    arabic = "أنا أحب 🌹 الناس"
    hebrew = "שלום   עולם"
    assert preprocess(arabic) == "أنا أحب rose الناس"
    assert preprocess(hebrew) == "שלום עולם"


def test_combining_marks_are_composed():
    assert preprocess("cafe\u0301") == "café"


def test_stray_joiners_and_selectors_are_dropped():
    assert preprocess("a\u200db\ufe0fc") == "abc"


def test_pure_and_idempotent():
    text = "Ｉ 👨🏿\u200d🦱 h8 🐒 !!"
    once = preprocess(text)
    assert preprocess(text) == once
    assert preprocess(once) == once


def test_no_preprocessing_leaves_text_alone():
    text = "  Ｈｉ 🐷  "
    assert preprocess(text, NO_PREPROCESSING) == text
    assert preprocess(text, {}) == text


def test_default_spec_is_used_when_none():
    assert preprocess("🐷", None) == preprocess("🐷", DEFAULT_PREPROCESSING) == "pig face"


def test_pairs_are_preprocessed_on_both_sides():
    assert preprocess_all(["🐷", ("🌹 a", "b  c")]) == ["pig face", ("rose a", "b c")]


@pytest.mark.parametrize(
    "spec",
    [{"version": 99}, {"emoji": "delete"}, {"unicode_normalization": "NFX"}, {"lowercase": True}],
)
def test_unknown_specs_are_refused(spec):
    with pytest.raises(PreprocessingError):
        preprocess("x", {**DEFAULT_PREPROCESSING, **spec})
