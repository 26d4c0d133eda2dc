"""The arena's anonymity check (core/self_identification.py): names found in any case or spacing, whole
pieces only; ordinary-word names only where the answer identifies itself; a distinctive name the prompt
holds not counted when merely mentioned, a self-identification always; the terms a model's name gives."""

from __future__ import annotations

import pytest

from core.self_identification import (
    DISTINCTIVE_TERMS,
    ORDINARY_WORD_TERMS,
    Term,
    identity_terms,
    named_terms,
    pieces,
    terms_of_model_name,
)

TERMS = identity_terms(["SmolLM2-135M-Instruct-Concise", "quokka-chat-7"], ["Acme Assist"])


def test_pieces_are_runs_of_letters_and_of_digits_folded():
    assert pieces("Chat-GPT 4o!") == ["chat", "gpt", "4", "o"]
    # Full-width letters (NFKC), accents and case fold away; emoji and punctuation are not pieces.
    assert pieces("Ｃｌａｕｄｅ Clâude 🤖 CLAUDE") == ["claude", "claude", "claude"]
    assert pieces("I'm") == ["i", "m"] and pieces("") == []


@pytest.mark.parametrize(
    ("answer", "named"),
    [
        ("I am ChatGPT, made by OpenAI.", ["OpenAI", "ChatGPT"]),
        ("I'm c h a t g p t, from open-ai", ["OpenAI", "ChatGPT"]),
        ("As CLAUDE (by anthropic) I think", ["Anthropic", "Claude"]),
        ("My name is Claude.", ["Claude"]),
        ("Hello! SmolLM here, a small model.", ["SmolLM"]),
        ("I am SmolLM2-135M-Instruct-Concise.", ["SmolLM", "SmolLM2-135M-Instruct-Concise"]),
        ("This is Quokka speaking", ["quokka"]),
        ("I'm an assistant called Gemini, trained by Mistral.", ["Gemini", "Mistral"]),
        ("ChatGPT is a chatbot by OpenAI; this painting by Claude Monet.", ["OpenAI", "ChatGPT"]),
        ("Ask Acme  assist anything", ["Acme Assist"]),
        # Ordinary words and people, not self-identifications: none.
        ("Claude Monet painted water lilies; the mistral is a cold wind.", []),
        ("Those born in early June are Gemini. Dolly the sheep. I grok it. NVIDIA makes GPUs.", []),
        ("Use a concise synonym: brief.", []),  # a model's name's ordinary word is no term
        ("A quokka lives on Rottnest Island.", []),  # a model's family word, not self-identifying
        # A term inside a longer word is not a name.
        ("Philosophy and Claudette and openair and geminis", []),
        ("The capital of France is Paris. مرحبا", []),
    ],
)
def test_names_in_any_case_or_spacing_and_ordinary_words_only_when_self_identifying(answer, named):
    assert named_terms(answer, TERMS) == named


def test_the_prompt_exempts_a_mention_not_a_self_identification():
    assert named_terms("ChatGPT is OpenAI's chatbot.", TERMS, prompt="What is ChatGPT (OpenAI)?") == []
    asked = "Are you SmolLM, Qwen, Llama, Claude, GPT-4 or Gemma?"
    assert named_terms("I am SmolLM, made by Hugging Face.", TERMS, prompt=asked) == [
        "Hugging Face",
        "SmolLM",
    ]
    assert named_terms("I am Claude.", TERMS, prompt=asked) == ["Claude"]


def test_the_terms_of_a_model_name():
    assert terms_of_model_name("SmolLM2-135M-Instruct") == [
        Term("SmolLM2-135M-Instruct"),
        Term("smollm", True),
    ]
    assert terms_of_model_name("gpt-x (chat, mini)") == [
        Term("gpt-x (chat, mini)")
    ]  # every word generic or short
    assert terms_of_model_name("🤖") == []
    # Each term once, by its pieces; given both ways, distinctive.
    assert len(identity_terms([])) == len(DISTINCTIVE_TERMS) + len(ORDINARY_WORD_TERMS)
    claude = [t for t in identity_terms([], ["claude"]) if t.key == "claude"]
    assert claude == [Term("Claude")] and not claude[0].needs_cue


def test_a_long_answer_is_checked_whole():
    answer = "word " * 2_000 + "and then: I am S m o l L M."
    assert named_terms(answer, TERMS) == ["SmolLM"]
