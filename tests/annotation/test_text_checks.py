"""The text an example, its explanation or a flag reason may hold (create_example, add_explanation,
flag_example): at least one visible character; no control characters or bidi overrides, each refused by
its name; tabs, line breaks and right-to-left text with its marks kept exactly; a CRLF counted as one
character in the explanation's limit."""

from __future__ import annotations

import pytest

from annotation.models import Example
from annotation.services import (
    ExampleError,
    add_explanation,
    create_example,
    flag_example,
)


def _create(task, user, statement, label="hateful", **kwargs):
    return create_example(task=task, annotator=user, inputs={"statement": statement}, target=label, **kwargs)


def _statement_errors(task, user, statement) -> list[str]:
    with pytest.raises(ExampleError) as info:
        _create(task, user, statement)
    assert list(info.value.errors) == ["statement"]
    return info.value.errors["statement"]


# --- statements of invisible characters only ---------------------------------------------------------


@pytest.mark.parametrize(
    "statement",
    [
        "\u200b\u200b\u200b",  # zero-width spaces
        "\ufeff\ufeff",  # byte-order marks
        "\u2800\u2800",  # braille pattern blank (a symbol that shows nothing)
        "\u3164",  # hangul filler (a letter that shows nothing)
        "\u115f\u1160\uffa0",  # the other hangul fillers
        "\u0301\u0301",  # combining marks with nothing to combine with
        "\u200d",  # zero-width joiner
        "\u2060\u180e",  # word joiner, mongolian vowel separator
        " \u200b\n\u200c ",  # invisible between spaces
    ],
)
def test_statements_without_a_visible_character_are_refused(hate_task, annotator, rule_model, statement):
    [message] = _statement_errors(hate_task, annotator, statement)
    assert "write something visible" in message
    assert Example.objects.count() == 0


@pytest.mark.parametrize("statement", ["👍", "🏳️\u200d🌈", "\u2800a", "e\u0301", "!", "7", "ש"])
def test_one_visible_character_is_enough(hate_task, annotator, rule_model, statement):
    example, created = _create(hate_task, annotator, statement)
    assert created and example.inputs["statement"] == statement


# --- control characters ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("statement", "code"),
    [
        ("ring \x07 the bell", "U+0007"),
        ("\x00", "U+0000"),
        ("nul\x00byte", "U+0000"),
        ("escape \x1b[31m", "U+001B"),
        ("next line \x85 (C1)", "U+0085"),
        ("\x1f", "U+001F"),  # also Python whitespace: the control message, not "required"
        ("form\x0cfeed", "U+000C"),
    ],
)
def test_control_characters_in_statements_are_refused_by_name(
    hate_task, annotator, rule_model, statement, code
):
    assert _statement_errors(hate_task, annotator, statement) == [
        f"Statement contains the control character {code}; remove it and send again."
    ]


def test_tab_and_line_breaks_are_not_control_errors(hate_task, annotator, rule_model):
    example, _ = _create(hate_task, annotator, "a\tb\r\nc\rd\ne")
    assert example.inputs["statement"] == "a\tb\nc\nd\ne"


@pytest.fixture
def example(hate_task, annotator, rule_model):
    return _create(hate_task, annotator, "go back home")[0]


@pytest.mark.parametrize("char", ["\u202e", "\u202d"], ids=["RLO", "LRO"])
def test_bidi_overrides_are_refused_by_name(hate_task, annotator, rule_model, char):
    name = {"\u202e": "RIGHT-TO-LEFT OVERRIDE", "\u202d": "LEFT-TO-RIGHT OVERRIDE"}[char]
    assert _statement_errors(hate_task, annotator, f"they are {char}dlrow") == [
        f"Statement contains U+{ord(char):04X} {name}, which shows the text in another order than it is "
        "stored; remove it and send again (right-to-left text itself is fine)."
    ]
    assert Example.objects.count() == 0


def test_right_to_left_text_with_marks_and_isolates_is_kept_exactly(hate_task, annotator, rule_model):
    # Arabic, RLM (U+200F), ALM (U+061C) and a first-strong isolate pair (U+2068 ... U+2069).
    statement = "\u0647\u0645 \u200f\u061c\u2068ok\u2069 \u05e9\u05dc\u05d5\u05dd"
    example, _ = _create(hate_task, annotator, statement)
    assert example.inputs == {"statement": statement}


def test_control_characters_in_explanations_and_flag_reasons_are_refused(example, annotator):
    with pytest.raises(ExampleError) as info:
        add_explanation(example=example, user=annotator, explanation="because\x07")
    assert info.value.errors == {
        "explanation": ["The explanation contains the control character U+0007; remove it and send again."]
    }
    with pytest.raises(ExampleError) as info:
        flag_example(example=example, user=annotator, reason="oops\x00")
    assert info.value.errors == {
        "reason": ["The reason contains the control character U+0000; remove it and send again."]
    }
    with pytest.raises(ExampleError) as info:
        _create(example.round.task, annotator, "fine", explanation="\x1b")
    assert "U+001B" in info.value.errors["explanation"][0]
    example.refresh_from_db()
    assert (example.explanation, example.is_flagged_by_annotator) == ("", False)


def test_explanation_length_counts_a_line_break_once(example, annotator):
    text = "b" * 1990 + "\r\n" * 10  # 2,010 characters as sent, 2,000 as a browser counts them
    add_explanation(example=example, user=annotator, explanation=text)
    example.refresh_from_db()
    assert example.explanation == "b" * 1990 + "\n" * 10
    with pytest.raises(ExampleError) as info:
        add_explanation(example=example, user=annotator, explanation=text + "b")
    assert info.value.errors == {
        "explanation": ["The explanation is too long: 2,001 characters, at most 2,000 allowed."]
    }
