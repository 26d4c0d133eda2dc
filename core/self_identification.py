"""Does an answer name the model that wrote it? The arena's anonymity check, run before answers are shown.

Pure functions (no Django). A model that says "As Claude..." or "I'm SmolLM" tells the voter which model
wrote which answer, and the vote is then not anonymous. Chatbot Arena drops such votes only after they
are cast, by a list of words (FastChat issue #1210; ``fastchat/serve/monitor/clean_battle_data.py``
matches ``identity_words`` in lower case). This check runs before the answers are shown, so the owner's
rule (regenerate, or mark the battle not anonymous) applies first.

**What is a name.** The terms are ``MAINTAINED_TERMS`` (model families, vendors and products, kept here),
the names of the task's registered models (``terms_of_model_name``: the whole name, and each word of it
of 4 letters or more that is not a generic word such as "instruct" or "chat"), and the owner's own
terms (the task's ``red_team.arena_identity_terms``).

**Any case or spacing.** Text and terms are compared as sequences of **pieces**: the text is normalised
(Unicode NFKC, so full-width letters become plain ones; case-folded; accents dropped) and cut into runs
of letters and runs of digits (``"GPT-4o"`` -> ``gpt 4 o``). A term matches when the concatenation of
some run of consecutive pieces (at most ``MAX_PIECES``) equals the term's own concatenation, so "Chat
GPT", "chat-gpt", "C H A T G P T" and "ChatGPT" all match ``ChatGPT``, while a term inside a longer word
does not ("philosophy" does not match ``Phi``; "Claudette" does not match ``Claude``).

**Not a leak.** A term the prompt itself holds (the user's and the passage's messages): an answer to
"What is Gemini?" names Gemini because it was asked to, which says nothing about who wrote it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence

__all__ = ["MAINTAINED_TERMS", "MAX_PIECES", "identity_terms", "named_terms", "pieces", "terms_of_model_name"]

#: Model families, vendors and chat products whose name in an answer says who wrote it. Kept to names that
#: are not ordinary words (no "Meta", "Command", "Phi", "Titan", "Orca" alone: an answer about a command
#: or a whale would be flagged); an ordinary word the prompt holds is not a leak anyway.
MAINTAINED_TERMS = (
    "OpenAI",
    "ChatGPT",
    "GPT-3",
    "GPT-3.5",
    "GPT-4",
    "GPT-4o",
    "GPT-5",
    "o1-preview",
    "Anthropic",
    "Claude",
    "Google DeepMind",
    "DeepMind",
    "Gemini",
    "Google Bard",
    "PaLM",
    "Gemma",
    "Meta AI",
    "LLaMA",
    "Llama 2",
    "Llama 3",
    "Mistral AI",
    "Mistral",
    "Mixtral",
    "Codestral",
    "Qwen",
    "Tongyi Qianwen",
    "Alibaba Cloud",
    "DeepSeek",
    "Phi-3",
    "Phi-4",
    "Microsoft Copilot",
    "Bing Chat",
    "Grok",
    "xAI",
    "Falcon LLM",
    "Hugging Face",
    "HuggingFace",
    "HuggingChat",
    "SmolLM",
    "Zephyr",
    "Command R",
    "Cohere",
    "OLMo",
    "AllenAI",
    "Ai2",
    "Nemotron",
    "NVIDIA",
    "Ernie Bot",
    "Baidu",
    "Kimi",
    "Moonshot AI",
    "Yi-34B",
    "01.AI",
    "Zhipu",
    "ChatGLM",
    "GLM-4",
    "MiniMax",
    "StableLM",
    "Stability AI",
    "IBM Watson",
    "Jamba",
    "AI21",
    "Pi AI",
    "Reka",
    "Amazon Nova",
    "Dolly",
    "Databricks",
    "DBRX",
    "WizardLM",
    "OpenChat",
    "TinyLlama",
)
#: Words of a model's name that say nothing of who made it.
GENERIC_WORDS = frozenset(
    "instruct instruction chat base model large small medium mini tiny turbo preview latest plus ultra pro "
    "vision online offline local remote server hosted greedy sampled sampling test demo target second first "
    "round answer answers reply assistant bot llm gguf fp16 bf16 int8 quantized awq gptq hf".split()
)
#: The most pieces a term may span ("C H A T G P T" is 7).
MAX_PIECES = 12
_PIECE = re.compile(r"[^\W\d_]+|\d+")


def pieces(text: str) -> list[str]:
    """``text`` normalised (NFKC, accents dropped, case-folded) and cut into runs of letters and runs of
    digits: ``pieces("Chat-GPT 4o!") == ["chat", "gpt", "4", "o"]``."""
    folded = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", text).casefold())
    plain = "".join(ch for ch in folded if not unicodedata.combining(ch))
    return _PIECE.findall(plain)


def terms_of_model_name(name: str) -> list[str]:
    """The terms a registered model's ``name`` gives: the whole name, and each run of letters of 4 or more
    that is not a generic word (``GENERIC_WORDS``). ``"SmolLM2-135M-Instruct"`` gives the name and
    ``smollm``."""
    words = [p for p in pieces(name) if p.isalpha() and len(p) >= 4 and p not in GENERIC_WORDS]
    return [name, *words] if pieces(name) else []


def identity_terms(model_names: Iterable[str], extra: Iterable[str] = ()) -> list[str]:
    """Every term of the check: ``MAINTAINED_TERMS``, the terms of each of ``model_names``
    (``terms_of_model_name``) and ``extra`` (the owner's), each once by its pieces, in that order."""
    out, seen = [], set()
    for term in [*MAINTAINED_TERMS, *(t for n in model_names for t in terms_of_model_name(n)), *extra]:
        key = "".join(pieces(term))
        if key and key not in seen:
            seen.add(key)
            out.append(term)
    return out


def _spans(text_pieces: Sequence[str]) -> set[str]:
    """The concatenations of every run of 1 to ``MAX_PIECES`` consecutive pieces."""
    found = set()
    for i in range(len(text_pieces)):
        joined = ""
        for piece in text_pieces[i : i + MAX_PIECES]:
            joined += piece
            found.add(joined)
    return found


def named_terms(answer: str, terms: Sequence[str], *, prompt: str = "") -> list[str]:
    """The terms (as given, in ``terms``' order) that ``answer`` names in any case or spacing (module
    docstring), leaving out those ``prompt`` names too. [] when none.

    ``answer`` of n pieces costs O(n x ``MAX_PIECES``) set insertions: a 10,000-character answer takes
    milliseconds."""
    spoken = _spans(pieces(answer))
    asked = _spans(pieces(prompt)) if prompt else set()
    out = []
    for term in terms:
        key = "".join(pieces(term))
        if key and key in spoken and key not in asked:
            out.append(term)
    return out
