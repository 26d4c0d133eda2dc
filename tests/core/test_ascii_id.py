"""``core.text_rules.ascii_id``: only short strings of ASCII digits are ids (leaderboard queries,
the create form's round field); other digits, signs, spaces and long strings are not."""

from __future__ import annotations

import pytest

from core.text_rules import ascii_id

LONG_DIGITS = "9" * 5000


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("12", 12),
        ("0", 0),
        ("123456789", 123456789),
        ("²", None),
        ("¹", None),
        ("١", None),
        ("٣٤", None),
        ("1234567890", None),
        (LONG_DIGITS, None),
        ("", None),
        (" 1", None),
        ("+1", None),
        ("1.0", None),
        (None, None),
    ],
)
def test_ascii_id_accepts_only_short_ascii_digit_strings(raw, expected):
    assert ascii_id(raw) == expected
