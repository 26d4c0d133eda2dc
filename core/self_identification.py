"""Does an answer name the model that wrote it? The arena's anonymity check, run before answers are shown.

Pure functions (no Django). A model that says "As Claude..." or "I'm SmolLM" tells the voter which model
wrote which answer, and the vote is then not anonymous. Chatbot Arena drops such votes only after they
are cast, by a list of words (FastChat issue #1210; ``fastchat/serve/monitor/clean_battle_data.py``
matches ``identity_words`` in lower case). This check runs before the answers are shown, so the owner's
rule (regenerate, or mark the battle not anonymous) applies first.

**What is a name.** ``Term``s of two kinds:

* **Distinctive** names, which no ordinary text holds: products and vendors (``DISTINCTIVE_TERMS``:
  ChatGPT, OpenAI, Anthropic, SmolLM, DeepSeek...), the whole name of each registered model, and the
  owner's own terms (the task's ``red_team.arena_identity_terms``). Named anywhere, they count.
* **Ordinary-word** names (``ORDINARY_WORD_TERMS``: Claude, Gemini, Mistral, Llama, Grok, NVIDIA...; and the
  family word of each registered model's name, ``terms_of_model_name``): "Claude Monet", "the mistral is
  a cold wind", "born in June, a Gemini", "a llama" are no leak. They count only where the answer
  **identifies itself** (``introduces``): "am", "I'm", "called", "named" or "name" among the four pieces
  before the name ("I am Claude", "I'm an assistant called Claude", "my name is Claude"), or right
  before it "as" ("As Claude, I..."), "this is", or "made", "created", "developed", "trained" or "built"
  followed by "by", "at" or "from" ("trained by Mistral").

**Any case or spacing.** Text and terms are compared as sequences of **pieces**: the text is normalised
(Unicode NFKC, so full-width letters become plain ones; case-folded; accents dropped) and cut into runs
of letters and runs of digits (``"GPT-4o"`` -> ``gpt 4 o``). A term matches when the concatenation of
some run of consecutive pieces (at most ``MAX_PIECES``) equals the term's own concatenation, so "Chat
GPT", "chat-gpt", "C H A T G P T" and "ChatGPT" all match ``ChatGPT``, while a term inside a longer word
does not ("philosophy" does not match "Phi"; "Claudette" does not match "Claude").

**The prompt.** A distinctive name the prompt holds (the user's messages and the passage, not the
models' own earlier answers) is not counted when merely mentioned: an answer to "What is ChatGPT?" names
ChatGPT because it was asked to. A self-identification counts whatever the prompt says: asked "Are you
SmolLM or Qwen?", "I am SmolLM" is a leak.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "CUES",
    "MADE",
    "DISTINCTIVE_TERMS",
    "MAX_PIECES",
    "ORDINARY_WORD_TERMS",
    "Term",
    "identity_terms",
    "introduces",
    "named_terms",
    "pieces",
    "terms_of_model_name",
]

#: Products, vendors and model families whose name no ordinary text holds.
DISTINCTIVE_TERMS = (
    "OpenAI", "ChatGPT", "GPT-3", "GPT-3.5", "GPT-4", "GPT-4o", "GPT-5", "o1-preview", "Anthropic",
    "Google DeepMind", "DeepMind", "Google Bard", "PaLM", "Meta AI", "Llama 2", "Llama 3", "Mistral AI",
    "Mixtral", "Codestral", "Qwen", "Tongyi Qianwen", "Alibaba Cloud", "DeepSeek", "Phi-3", "Phi-4",
    "Microsoft Copilot", "Bing Chat", "xAI", "Falcon LLM", "Hugging Face", "HuggingChat", "SmolLM",
    "Command R", "Cohere", "OLMo", "AllenAI", "Nemotron", "Ernie Bot", "Moonshot AI", "Yi-34B", "01.AI",
    "ChatGLM", "GLM-4", "StableLM", "Stability AI", "IBM Watson", "AI21", "Amazon Nova", "Databricks",
    "DBRX", "WizardLM", "OpenChat", "TinyLlama",
)  # fmt: skip
#: Names that are also ordinary words, or names of people and things: counted only in a self-identification.
ORDINARY_WORD_TERMS = (
    "Claude", "Gemini", "Gemma", "Bard", "Mistral", "Llama", "Grok", "Kimi", "NVIDIA", "Dolly", "Baidu",
    "Zhipu", "MiniMax", "Jamba", "Reka", "Falcon", "Copilot", "Alibaba", "Phi",
)  # fmt: skip
#: Pieces that make a name a self-identification when among the ``CUE_WINDOW`` before it ("m" ends "I'm").
CUES = frozenset({"am", "m", "called", "named", "name"})
#: How many pieces before a name are searched for a cue.
CUE_WINDOW = 4
#: Verbs of making that, with "by", "at" or "from" right before a name, introduce its maker.
MADE = frozenset({"made", "created", "developed", "trained", "built"})
#: Words of a model's name that say nothing of who made it.
GENERIC_WORDS = frozenset(
    "instruct instruction chat base model large small medium mini tiny turbo preview latest plus ultra pro "
    "vision online offline local remote server hosted greedy sampled sampling test demo target second first "
    "round answer answers reply assistant bot llm gguf fp16 bf16 int8 quantized awq gptq hf".split()
)
#: The most pieces a term may span ("C H A T G P T" is 7).
MAX_PIECES = 12
_PIECE = re.compile(r"[^\W\d_]+|\d+")


@dataclass(frozen=True)
class Term:
    """A name to look for: ``text`` as given (reported), and ``needs_cue`` (an ordinary-word name, counted
    only in a self-identification: module docstring)."""

    text: str
    needs_cue: bool = False

    @property
    def key(self) -> str:
        return "".join(pieces(self.text))


def pieces(text: str) -> list[str]:
    """``text`` normalised (NFKC, accents dropped, case-folded) and cut into runs of letters and runs of
    digits: ``pieces("Chat-GPT 4o!") == ["chat", "gpt", "4", "o"]``."""
    folded = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", text).casefold())
    plain = "".join(ch for ch in folded if not unicodedata.combining(ch))
    return _PIECE.findall(plain)


def terms_of_model_name(name: str) -> list[Term]:
    """The terms a registered model's ``name`` gives: the whole name (distinctive), and its family word,
    the first run of 4 letters or more that is not a generic word (``GENERIC_WORDS``), as an
    ordinary-word term. ``"SmolLM2-135M-Instruct-Concise"`` gives the name and ``smollm`` (not
    "concise", an ordinary word that says nothing of the maker)."""
    parts = pieces(name)
    if not parts:
        return []
    family = next((p for p in parts if p.isalpha() and len(p) >= 4 and p not in GENERIC_WORDS), None)
    return [Term(name), *([Term(family, needs_cue=True)] if family else [])]


def identity_terms(model_names: Iterable[str], extra: Iterable[str] = ()) -> list[Term]:
    """Every term of the check: ``DISTINCTIVE_TERMS`` and ``ORDINARY_WORD_TERMS``, the terms of each of
    ``model_names`` (``terms_of_model_name``) and ``extra`` (the owner's, distinctive), each once by its
    pieces; a term given both ways is distinctive."""
    found: dict[str, Term] = {}
    candidates = [
        *(Term(t) for t in DISTINCTIVE_TERMS),
        *(Term(t, needs_cue=True) for t in ORDINARY_WORD_TERMS),
        *(t for n in model_names for t in terms_of_model_name(n)),
        *(Term(t) for t in extra),
    ]
    for term in candidates:
        key = term.key
        if not key:
            continue
        if key not in found or (found[key].needs_cue and not term.needs_cue):
            found[key] = term if key not in found else Term(found[key].text)
    return list(found.values())


def _spans(text_pieces: Sequence[str]) -> dict[str, list[int]]:
    """The concatenation of every run of 1 to ``MAX_PIECES`` consecutive pieces -> where such runs start."""
    found: dict[str, list[int]] = {}
    for i in range(len(text_pieces)):
        joined = ""
        for piece in text_pieces[i : i + MAX_PIECES]:
            joined += piece
            found.setdefault(joined, []).append(i)
    return found


def introduces(said: Sequence[str], start: int) -> bool:
    """Whether the pieces before ``said[start]`` make what starts there a self-identification (module
    docstring): a ``CUES`` piece among the ``CUE_WINDOW`` before it, or right before it "as", "this is",
    or a ``MADE`` verb and "by", "at" or "from"."""
    before = said[max(0, start - CUE_WINDOW) : start]
    if any(piece in CUES for piece in before):
        return True
    last, second = (said[start - 1] if start >= 1 else ""), (said[start - 2] if start >= 2 else "")
    return (
        last == "as" or (second, last) == ("this", "is") or (second in MADE and last in {"by", "at", "from"})
    )


def named_terms(answer: str, terms: Sequence[Term | str], *, prompt: str = "") -> list[str]:
    """The terms (their text, in ``terms``' order) that ``answer`` names as the module docstring says: a
    distinctive term anywhere unless ``prompt`` holds it too, or in a self-identification; an
    ordinary-word term in a self-identification only. A plain string is a distinctive term. [] when none.

    An ``answer`` of n pieces costs O(n x ``MAX_PIECES``): a 10,000-character answer takes milliseconds."""
    said = pieces(answer)
    spoken = _spans(said)
    asked = _spans(pieces(prompt)) if prompt else {}
    out = []
    for term in terms:
        term = Term(term) if isinstance(term, str) else term
        key = term.key
        if not key or key not in spoken:
            continue
        introduced = any(introduces(said, start) for start in spoken[key])
        if introduced or (not term.needs_cue and key not in asked):
            out.append(term.text)
    return out
