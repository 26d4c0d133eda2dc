"""The arena's anonymity check (core/self_identification.py): names found in any case or spacing, whole
pieces only, a name the prompt holds not counted, and the terms a registered model's name gives."""

from __future__ import annotations

import pytest

from core.self_identification import (
    MAINTAINED_TERMS,
    identity_terms,
    named_terms,
    pieces,
    terms_of_model_name,
)

TERMS = identity_terms(["SmolLM2-135M-Instruct", "quokka-chat-7"], ["Acme Assist"])


def test_pieces_are_runs_of_letters_and_of_digits_folded():
    assert pieces("Chat-GPT 4o!") == ["chat", "gpt", "4", "o"]
    # Full-width letters (NFKC), accents and case fold away; emoji and punctuation are not pieces.
    assert pieces("Ｃｌａｕｄｅ Clâude 🤖 CLAUDE") == ["claude", "claude", "claude"]
    assert pieces("") == []


@pytest.mark.parametrize(
    ("answer", "named"),
    [
        ("I am ChatGPT, made by OpenAI.", ["OpenAI", "ChatGPT"]),
        ("I'm c h a t g p t, from open-ai", ["OpenAI", "ChatGPT"]),
        ("As CLAUDE (by anthropic) I think", ["Anthropic", "Claude"]),
        ("Hello! I'm SmolLM, a small model.", ["SmolLM"]),
        ("I am SmolLM2-135M-Instruct.", ["SmolLM", "SmolLM2-135M-Instruct"]),
        ("quokka chat 7 here", ["quokka-chat-7", "quokka"]),
        ("Ask Acme  assist anything", ["Acme Assist"]),
        # A term inside a longer word is not a name.
        ("Philosophy and Claudette and openair and geminis", []),
        ("The capital of France is Paris. مرحبا", []),
    ],
)
def test_names_in_any_case_or_spacing(answer, named):
    assert named_terms(answer, TERMS) == named


def test_a_name_the_prompt_holds_is_not_a_leak():
    assert named_terms("Gemini is Google's model; I am Claude.", TERMS, prompt="What is gemini?") == [
        "Claude"
    ]
    assert named_terms("Claude Monet painted water lilies.", TERMS, prompt="Who was Claude Monet?") == []


def test_the_terms_of_a_model_name():
    assert terms_of_model_name("SmolLM2-135M-Instruct") == ["SmolLM2-135M-Instruct", "smollm"]
    assert terms_of_model_name("gpt-x (chat, mini)") == ["gpt-x (chat, mini)"]  # every word generic or short
    assert terms_of_model_name("🤖") == []
    # Each term once, by its pieces: "Hugging Face" and "HuggingFace" are one.
    assert len(identity_terms([])) == len(MAINTAINED_TERMS) - 1
    assert identity_terms(["OpenAI"], ["open ai"]) == identity_terms([])


def test_a_long_answer_is_checked_whole():
    answer = "word " * 2_000 + "and then: I am S m o l L M."
    assert named_terms(answer, TERMS) == ["SmolLM"]
