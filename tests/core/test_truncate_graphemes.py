"""text_rules.truncate_graphemes: cut to whole user-perceived characters, never inside an emoji sequence."""

from __future__ import annotations

import pytest
from django.template import Context, Template

from core.text_rules import truncate_graphemes

FAMILY = "👨\u200d👩\u200d👧"  # 5 code points, 1 character on screen
RAINBOW = "🏳\ufe0f\u200d🌈"  # 4 code points


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("short", 80, "short"),
        ("abcdef", 6, "abcdef"),  # exactly the limit: whole
        ("abcdefg", 6, "abcde…"),  # the "…" counts, as in truncatechars
        (FAMILY * 3, 3, FAMILY * 3),  # 15 code points but 3 characters: whole
        (FAMILY * 4, 3, FAMILY * 2 + "…"),
        (RAINBOW * 5, 4, RAINBOW * 3 + "…"),
        ("e\u0301" * 5, 3, "e\u0301e\u0301…"),  # a letter and its accent stay together
        ("👍🏽 ok", 2, "👍🏽…"),
        ("abc", 0, ""),
        ("", 5, ""),
    ],
)
def test_cuts_between_whole_characters(text, limit, expected):
    assert truncate_graphemes(text, limit) == expected


def test_the_template_filter_and_truncatechars_on_a_row_of_flags():
    context = Context({"text": RAINBOW * 30})
    ours = Template("{% load text %}{{ text|truncate_graphemes:10 }}").render(context)
    assert ours == RAINBOW * 9 + "…"
    # Django's filter counts code points and ends on a bare white flag the author never wrote.
    theirs = Template("{{ text|truncatechars:10 }}").render(context)
    assert not theirs.startswith(RAINBOW * 9)
    # A limit that is not a number leaves the text whole, as truncatechars does.
    assert Template("{% load text %}{{ text|truncate_graphemes:'x' }}").render(context) == RAINBOW * 30
