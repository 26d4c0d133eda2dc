"""Attributions shown per whole word of the original text (engine/explain/attributions.py, "Shown"),
the baseline stated in words, newlines kept, and the API's ``words`` list.

Scores are made up and summed by hand: a word's score is the sum of its pieces' scores.
"""

from __future__ import annotations

import re

import pytest
from django.template.loader import render_to_string

from engine.explain.attributions import (
    Explanation,
    TokenScore,
    attribute,
    signed,
    word_spans,
    words_of,
)
from engine.runtime.classifier import Classifier

MARK = re.compile(r'<mark class="attr attr-(pos|neg)-([1-5])" title="(-?[0-9.]+)">([^<]*)</mark>')


def token(text: str, start: int, end: int, score: float, side: int = 0) -> TokenScore:
    return TokenScore(text[start:end], start, end, score, (text[start:end],), side)


def explanation_of(text: str, tokens: list[TokenScore], **extra) -> Explanation:
    total = sum(t.score for t in tokens)
    values = {
        "target_label": "not-hateful",
        "tokens": tuple(tokens),
        "logit_input": 0.9,
        "logit_baseline": 0.9 - total,
        "attribution_sum": total,
        "convergence_delta": 0.0,
        "tolerance": 0.02,
        "within_tolerance": True,
        "n_steps": 50,
        "texts": (text,),
        "fields": ("statement",),
        "labels": ("hateful", "not-hateful"),
        "input_logits": (-0.2, 0.9),
        "baseline_logits": (-0.2, 0.9 - total),
    }
    return Explanation(**{**values, **extra})


# --- words of the original text -------------------------------------------------------------------------


def test_word_spans_join_punctuation_and_keep_emoji_apart():
    text = "“Vermin.” e-mail love🌈 👨‍👩‍👧 我爱"
    assert [text[s:e] for s, e in word_spans(text)] == [
        "“Vermin.”",  # punctuation joins the word it touches
        "e-mail",
        "love",  # an emoji beside a word stands alone
        "🌈",
        "👨‍👩‍👧",  # a ZWJ sequence stays whole
        "我",  # ideographs are words each (UAX #29)
        "爱",
    ]
    arabic = "المهاجرون حشرات"
    assert [arabic[s:e] for s, e in word_spans(arabic)] == ["المهاجرون", "حشرات"]


def test_vermin_split_into_pieces_is_one_word_whose_score_is_the_sum():
    text = "Immigrants are vermin"
    tokens = [token(text, 0, 10, 0.5), token(text, 11, 14, -0.25), token(text, 15, 17, -0.75)]
    tokens.append(token(text, 17, 21, 0.125))  # "ve" + "rmin"
    words = words_of(text, tokens)
    assert [(w.word, w.start, w.end) for w in words] == [
        ("Immigrants", 0, 10),
        ("are", 11, 14),
        ("vermin", 15, 21),
    ]
    assert words[2].score == -0.625  # -0.75 + 0.125
    assert sum(w.score for w in words) == sum(t.score for t in tokens) == -0.375
    explanation = explanation_of(text, tokens)
    assert [w.word for w in explanation.top(2)] == ["vermin", "Immigrants"]  # |-0.625| > |0.5|
    html = render_to_string("models_registry/_attributions.html", {"explanation": explanation})
    marks = MARK.findall(html)
    assert [m[3] for m in marks] == ["Immigrants", "are", "vermin"]
    assert marks[2][:3] == ("neg", "5", "-0.625")  # the strongest word
    assert marks[1][:2] == ("neg", "2")  # ceil(5 * 0.25 / 0.625) = 2
    assert ">rmin<" not in html and ">ve<" not in html and ">vermin</span>" in html


def test_an_arabic_word_attributed_letter_by_letter_is_one_mark():
    text = "هم حشرات"  # "they are vermin"; the tokenizer gave one token per letter
    tokens = [token(text, i, i + 1, 0.125 * (i + 1)) for i in range(len(text)) if not text[i].isspace()]
    explanation = explanation_of(text, tokens)
    words = explanation.words
    assert [w.word for w in words] == ["هم", "حشرات"]
    assert words[0].score == 0.125 + 0.25
    assert words[1].score == 0.125 * (4 + 5 + 6 + 7 + 8)  # letters 3..7: 3.75
    html = render_to_string("models_registry/_attributions.html", {"explanation": explanation})
    assert [m[3] for m in MARK.findall(html)] == ["هم", "حشرات"]
    assert '<p class="attributions-text wrap-anywhere" dir="auto">' in html


def test_a_token_across_two_words_joins_them_and_nothing_is_lost():
    text = "ab cd ef"
    tokens = [token(text, 0, 4, 1.0), token(text, 6, 8, 2.0)]  # "ab c" (e.g. a ligature) and "ef"
    words = words_of(text, tokens)
    assert [(w.word, w.score) for w in words] == [("ab cd", 1.0), ("ef", 2.0)]


def test_the_newline_of_a_two_line_statement_is_kept():
    text = "They are rats\nand vermin"
    tokens = [token(text, s, e, 0.5) for s, e in word_spans(text)]
    html = render_to_string(
        "models_registry/_attributions.html", {"explanation": explanation_of(text, tokens)}
    )
    assert '<mark class="attr attr-pos-5" title="0.500">rats</mark>\n<mark' in html
    css = open("dynabench/static/dynabench/site.css", encoding="utf-8").read()
    block = css[css.index("/* --- token attributions") : css.index("/* --- end token attributions")]
    assert re.search(r"\.attributions-text \{[^}]*white-space: pre-wrap", block)


# --- the baseline in words ------------------------------------------------------------------------------


def test_the_baseline_is_stated_with_where_the_model_already_leans():
    # logits at the blank text: hateful -0.2, not-hateful +1.4 -> softmax 1 / (1 + e^-1.6) = 83.2 %;
    # at the text: not-hateful +0.9 vs -0.2 -> 1 / (1 + e^-1.1) = 75.0 %; moved 0.9 - 1.4 = -0.5.
    text = "I love my neighbours"
    tokens = [token(text, 0, 1, -0.1), token(text, 2, 6, 0.2), token(text, 7, 9, -0.25)]
    tokens.append(token(text, 10, 20, -0.35))
    explanation = explanation_of(text, tokens, baseline_logits=(-0.2, 1.4), logit_baseline=1.4)
    summary = explanation.summary()
    assert summary["baseline_label"] == "not-hateful" and summary["baseline_percent"] == "83.2"
    assert summary["input_percent"] == "75.0" and summary["moved"] == "\u22120.50"
    html = render_to_string("models_registry/_attributions.html", {"explanation": explanation})
    assert (
        "With every word blanked, the model already leans towards <strong>not-hateful</strong> "
        "(83.2%; not-hateful logit +1.40 vs \u22120.20 for hateful). With the words of the text, "
        "<strong>not-hateful</strong> gets 75.0% (logit +0.90): the words together moved the "
        "not-hateful logit by \u22120.50."
    ) in html
    assert "Words that moved the model most (either way):" in html
    items = re.findall(r"<li>(.*?)</li>", html)
    assert [re.sub(r"<[^>]+>", "", i) for i in items] == [
        "neighbours: away from not-hateful (-0.35)",
        "my: away from not-hateful (-0.25)",
        "love: towards not-hateful (0.20)",
        "I: away from not-hateful (-0.10)",
    ]


def test_a_baseline_leaning_the_other_way_does_not_say_already():
    text = "rats"
    explanation = explanation_of(text, [token(text, 0, 4, 1.5)], baseline_logits=(0.3, -0.6))
    html = render_to_string("models_registry/_attributions.html", {"explanation": explanation})
    assert "the model leans towards <strong>hateful</strong> (71.1%;" in html  # 1 / (1 + e^-0.9)


def test_signed_numbers():
    assert [signed(1.4), signed(-0.2), signed(0.001), signed(-0.004)] == [
        "+1.40",
        "\u22120.20",
        "0.00",
        "0.00",
    ]


def test_an_explanation_cached_before_the_logit_vectors_still_renders():
    text = "rats"
    old = explanation_of(text, [token(text, 0, 4, 1.5)], labels=(), input_logits=(), baseline_logits=())
    assert old.summary() is None
    html = render_to_string("models_registry/_attributions.html", {"explanation": old})
    assert "With every word blanked" not in html and len(MARK.findall(html)) == 1


# --- a real (tiny) classifier and the API ---------------------------------------------------------------


def test_a_real_tokenizer_splitting_vermin_shows_one_word(tiny_model_dir):
    classifier = Classifier(tiny_model_dir)
    text = "they are vermin\nand rats 🐀"
    explanation = attribute(classifier, text)
    vermin = [t for t in explanation.tokens if 9 <= t.start < 15]
    assert len(vermin) > 1  # the tiny vocabulary spells it letter by letter: v ##e ##r ##m ##i ##n
    words = {w.word: w for w in explanation.words}
    assert list(words) == ["they", "are", "vermin", "and", "rats", "🐀"]
    assert words["vermin"].score == pytest.approx(sum(t.score for t in vermin), abs=1e-12)
    assert sum(w.score for w in explanation.words) == pytest.approx(explanation.attribution_sum, abs=1e-9)
    api = explanation.as_api()
    assert [(w["word"], w["start"], w["end"]) for w in api["words"]][2] == ("vermin", 9, 15)
    assert len(api["attributions"]) == len(explanation.tokens)  # the per-token list is unchanged
