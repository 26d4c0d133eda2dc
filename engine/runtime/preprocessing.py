"""Text preprocessing stored with each model and applied identically in training, prediction and evaluation.

MiniLM's WordPiece vocabulary has no emoji: every emoji becomes ``[UNK]`` and the model cannot tell
"I love 🐷" from "I love 🌹". So before tokenising, emoji are replaced by their English names
("🐷" -> "pig face"), which the vocabulary does cover.

The steps a model uses are recorded in its config as a small dict (``DEFAULT_PREPROCESSING``) so that a
model trained with one version of this module is served with the same steps. This module imports neither
torch nor transformers.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any

import emoji

PREPROCESSING_VERSION = 1

#: The preprocessing of the models this project trains; stored under ``config.preprocessing``.
DEFAULT_PREPROCESSING: dict[str, Any] = {
    "version": PREPROCESSING_VERSION,
    "emoji": "names",  # "names": replace each emoji (sequence) by its English name; "keep": leave it
    "unicode_normalization": "NFKC",  # any form unicodedata accepts, or "" for none
    "collapse_whitespace": True,
}

#: No preprocessing at all (for models registered without a ``preprocessing`` entry).
NO_PREPROCESSING: dict[str, Any] = {
    "version": PREPROCESSING_VERSION,
    "emoji": "keep",
    "unicode_normalization": "",
    "collapse_whitespace": False,
}

_WHITESPACE = re.compile(r"\s+")
# Joiners and variation selectors left over once the emoji they belonged to are gone (or that never
# belonged to a known emoji); they are invisible and only produce [UNK].
_INVISIBLE = dict.fromkeys(map(ord, "\u200d\ufe0e\ufe0f"), None)


class PreprocessingError(ValueError):
    """A preprocessing spec this module does not understand (unknown step or version)."""


def _emoji_name(chars: str, data: dict) -> str:
    name = data.get("en", "").strip(":").replace("_", " ")
    return f" {name} " if name else " "


def check_spec(spec: Mapping[str, Any] | None) -> dict[str, Any]:
    """Return a complete spec (missing keys filled from ``NO_PREPROCESSING``) or raise ``PreprocessingError``.

    ``None`` or ``{}`` means no preprocessing.
    """
    full = {**NO_PREPROCESSING, **(spec or {})}
    if full["version"] != PREPROCESSING_VERSION:
        raise PreprocessingError(f"unknown preprocessing version {full['version']!r}")
    if full["emoji"] not in ("names", "keep"):
        raise PreprocessingError(f"unknown emoji step {full['emoji']!r} (expected 'names' or 'keep')")
    if full["unicode_normalization"] not in ("", "NFC", "NFD", "NFKC", "NFKD"):
        raise PreprocessingError(f"unknown unicode normalization {full['unicode_normalization']!r}")
    unknown = set(full) - set(NO_PREPROCESSING)
    if unknown:
        raise PreprocessingError(f"unknown preprocessing keys {sorted(unknown)}")
    return full


def preprocess(text: str, spec: Mapping[str, Any] | None = None) -> str:
    """Apply a model's preprocessing to one text. Pure: same input and spec, same output.

    Steps, in order (each only if the spec asks for it):

    1. emoji -> names: every emoji, including ZWJ sequences (👨‍👩‍👧), skin-tone modifiers (👍🏽),
       flags (🇬🇧) and keycaps (1️⃣), becomes its English name with spaces instead of underscores,
       surrounded by spaces ("family man woman girl"). Emoji are matched before normalisation so that
       NFKC cannot break a sequence apart. Stray zero-width joiners and variation selectors are dropped.
    2. Unicode normalisation (NFKC by default: full-width and stylised letters become plain ones).
    3. Whitespace collapse: runs of white space become one space; leading/trailing space is removed.

    Args:
        text: the raw input.
        spec: the model's ``preprocessing`` dict; ``None`` uses ``DEFAULT_PREPROCESSING``.

    Raises:
        PreprocessingError: for a spec this version does not understand.
    """
    full = check_spec(DEFAULT_PREPROCESSING if spec is None else spec)
    if full["emoji"] == "names":
        text = emoji.replace_emoji(text, replace=_emoji_name)
        text = text.translate(_INVISIBLE)
    if full["unicode_normalization"]:
        text = unicodedata.normalize(full["unicode_normalization"], text)
    if full["collapse_whitespace"]:
        text = _WHITESPACE.sub(" ", text).strip()
    return text


def preprocess_all(
    texts: Iterable[str | tuple[str, str]], spec: Mapping[str, Any] | None = None
) -> list[str | tuple[str, str]]:
    """``preprocess`` each text, or each side of each (a, b) text pair; keeps the order."""
    out: list[str | tuple[str, str]] = []
    for text in texts:
        if isinstance(text, tuple | list):
            a, b = text
            out.append((preprocess(a, spec), preprocess(b, spec)))
        else:
            out.append(preprocess(text, spec))
    return out
