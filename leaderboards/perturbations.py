"""Seeded text perturbations for the robustness and fairness metrics (Dynaboard, Ma et al. 2021).

Pure Python. ``perturb(text, kind, seed=..., item_id=...)`` returns the perturbed text, which may be
the text itself when nothing applies (an item with no demographic word has no fairness variant); the
caller skips those items (docs/domain.md, "Fairness and robustness": "Examples that a perturbation
leaves unchanged are skipped").

Determinism: every item gets its own ``random.Random(seed + stable_hash(item_id))`` where
``stable_hash`` is the first 8 bytes of SHA-256 of the item id, so the output depends only on
(text, kind, seed, item id): not on Python's salted ``hash``, the process, or the order of items.

* ``robustness``: one of typos (swap two neighbouring letters, drop a letter, double a letter, in
  about one word in six of four letters or more), casing (all lower, all upper, or one word's case
  flipped), punctuation (drop it, or add ``!``/``...``/``?`` at the end), contractions (``do not`` <->
  ``don't``...). The kinds are tried in a seeded order; the first that changes the text is kept
  (recorded in ``Perturbed.operation``). These keep the meaning a reader gives the text, so the gold
  label is kept.
* ``fairness``: demographic words swapped for counterparts: gendered words and pronouns (he <-> she,
  men <-> women...), first names (a seeded choice among names of the other gender), identity terms
  (a seeded choice among terms of the same category, e.g. one religion for another). Every
  occurrence in one text is swapped consistently; case is kept (``Muslims`` -> ``Christians``).
  The label is kept: a statement hateful towards one protected group is hateful towards its
  counterpart (HateCheck's definition), and a neutral one stays neutral.

The word lists are small and curated (English only); a perturbation of text in another language
usually leaves it unchanged, which skips it.
"""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass

ROBUSTNESS = "robustness"
FAIRNESS = "fairness"
KINDS = (ROBUSTNESS, FAIRNESS)

_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")

# --- fairness word lists ----------------------------------------------------------------------------

_GENDER_PAIRS = [
    ("he", "she"),
    ("him", "her"),
    ("his", "her"),
    ("himself", "herself"),
    ("man", "woman"),
    ("men", "women"),
    ("boy", "girl"),
    ("boys", "girls"),
    ("male", "female"),
    ("males", "females"),
    ("father", "mother"),
    ("fathers", "mothers"),
    ("dad", "mum"),
    ("son", "daughter"),
    ("sons", "daughters"),
    ("brother", "sister"),
    ("brothers", "sisters"),
    ("husband", "wife"),
    ("husbands", "wives"),
    ("boyfriend", "girlfriend"),
    ("king", "queen"),
    ("gentleman", "lady"),
    ("gentlemen", "ladies"),
    ("guy", "gal"),
    ("uncle", "aunt"),
    ("nephew", "niece"),
    ("mr", "mrs"),
]
# "her" maps back to "him" or "his"; decided from the next word in ``_swap_gender``.
_GENDER: dict[str, str] = {}
for _a, _b in _GENDER_PAIRS:
    _GENDER.setdefault(_a, _b)
    _GENDER.setdefault(_b, _a)

MALE_NAMES = (
    "james john robert michael william david richard joseph thomas daniel matthew mark paul steven "
    "andrew joshua kevin brian george edward ahmed mohammed omar jamal darnell carlos juan wei raj"
).split()
FEMALE_NAMES = (
    "mary patricia jennifer linda elizabeth barbara susan jessica sarah karen nancy lisa emily emma "
    "olivia sophia anna laura fatima aisha layla keisha maria lucia mei priya"
).split()

IDENTITY_TERMS: dict[str, tuple[str, ...]] = {
    "religion_plural": ("muslims", "christians", "jews", "hindus", "buddhists", "sikhs"),
    "religion": ("muslim", "christian", "jewish", "hindu", "buddhist", "sikh"),
    "nationality_plural": ("mexicans", "indians", "chinese", "nigerians", "poles", "syrians", "italians"),
    "nationality": ("mexican", "indian", "nigerian", "polish", "syrian", "italian", "pakistani"),
    "region_plural": ("africans", "asians", "europeans", "arabs", "latinos"),
}
_IDENTITY: dict[str, tuple[str, ...]] = {}
for _terms in IDENTITY_TERMS.values():
    for _term in _terms:
        _IDENTITY[_term] = tuple(t for t in _terms if t != _term)

# --- robustness word lists --------------------------------------------------------------------------

CONTRACTIONS = {
    "do not": "don't",
    "does not": "doesn't",
    "did not": "didn't",
    "is not": "isn't",
    "are not": "aren't",
    "was not": "wasn't",
    "were not": "weren't",
    "have not": "haven't",
    "has not": "hasn't",
    "can not": "can't",
    "cannot": "can't",
    "will not": "won't",
    "would not": "wouldn't",
    "should not": "shouldn't",
    "could not": "couldn't",
    "i am": "i'm",
    "you are": "you're",
    "we are": "we're",
    "they are": "they're",
    "it is": "it's",
    "that is": "that's",
    "he is": "he's",
    "she is": "she's",
    "i will": "i'll",
    "you will": "you'll",
    "they will": "they'll",
    "i have": "i've",
    "they have": "they've",
    "let us": "let's",
}
_EXPANSIONS = {short: long for long, short in CONTRACTIONS.items() if long != "cannot"}
_CONTRACT_RE = re.compile(r"\b(" + "|".join(re.escape(k) for k in CONTRACTIONS) + r")\b", re.IGNORECASE)
_EXPAND_RE = re.compile(r"\b(" + "|".join(re.escape(k) for k in _EXPANSIONS) + r")\b", re.IGNORECASE)
_PUNCT_RE = re.compile(r"[.,;:!?\"“”‘’()\[\]-]")


@dataclass(frozen=True)
class Perturbed:
    """A perturbation's result: the new text and the operation that made it (``""`` if unchanged)."""

    text: str
    operation: str

    @property
    def changed(self) -> bool:
        return bool(self.operation)


def stable_hash(item_id: str) -> int:
    """A process-independent 64-bit hash of ``item_id`` (first 8 bytes of its SHA-256, big-endian)."""
    return int.from_bytes(hashlib.sha256(str(item_id).encode("utf-8")).digest()[:8], "big")


def item_rng(seed: int, item_id: str) -> random.Random:
    """The random generator of one item: ``random.Random(seed + stable_hash(item_id))``."""
    return random.Random(int(seed) + stable_hash(item_id))


def _match_case(template: str, word: str) -> str:
    if template.isupper() and len(template) > 1:
        return word.upper()
    if template[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


# --- robustness -------------------------------------------------------------------------------------


def _typos(text: str, rng: random.Random) -> str:
    words = [m for m in _WORD.finditer(text) if len(m.group()) >= 4 and m.group().isalpha()]
    if not words:
        return text
    chosen = rng.sample(words, k=min(len(words), 1 + len(words) // 6))
    out = text
    # Right to left, so earlier offsets stay valid.
    for match in sorted(chosen, key=lambda m: m.start(), reverse=True):
        word = match.group()
        i = rng.randrange(1, len(word) - 2)  # letters i and i + 1 are inner ones: ends are kept
        op = rng.choice(("swap", "drop", "double"))
        if op == "swap" and word[i] != word[i + 1]:
            new = word[:i] + word[i + 1] + word[i] + word[i + 2 :]
        elif op == "drop":
            new = word[:i] + word[i + 1 :]
        else:
            new = word[: i + 1] + word[i] + word[i + 1 :]
        out = out[: match.start()] + new + out[match.end() :]
    return out


def _casing(text: str, rng: random.Random) -> str:
    op = rng.choice(("lower", "upper", "flip_word"))
    if op == "lower":
        return text.lower()
    if op == "upper":
        return text.upper()
    words = list(_WORD.finditer(text))
    if not words:
        return text
    match = rng.choice(words)
    return text[: match.start()] + match.group().swapcase() + text[match.end() :]


def _punctuation(text: str, rng: random.Random) -> str:
    stripped = text.rstrip()
    if _PUNCT_RE.search(text) and rng.random() < 0.5:
        return re.sub(r"\s{2,}", " ", _PUNCT_RE.sub("", text)).strip() or text
    # Replace the closing punctuation (if any) by another mark, or add one.
    return stripped.rstrip(".!?") + rng.choice(("!", "...", "?", "!!")) + text[len(stripped) :]


def _contractions(text: str, rng: random.Random) -> str:
    def contract(m: re.Match) -> str:
        return _match_case(m.group(), CONTRACTIONS[m.group().lower()])

    def expand(m: re.Match) -> str:
        return _match_case(m.group(), _EXPANSIONS[m.group().lower()])

    first, second = ((_CONTRACT_RE, contract), (_EXPAND_RE, expand))[:: rng.choice((1, -1))]
    for pattern, replace in (first, second):
        new = pattern.sub(replace, text)
        if new != text:
            return new
    return text


_ROBUSTNESS_OPS = (
    ("typos", _typos),
    ("casing", _casing),
    ("punctuation", _punctuation),
    ("contractions", _contractions),
)


def perturb_robustness(text: str, rng: random.Random) -> Perturbed:
    """Try the robustness operations in a seeded order; keep the first that changes ``text``."""
    ops = list(_ROBUSTNESS_OPS)
    rng.shuffle(ops)
    for name, op in ops:
        new = op(text, rng)
        if new != text:
            return Perturbed(new, name)
    return Perturbed(text, "")


# --- fairness ---------------------------------------------------------------------------------------


def perturb_fairness(text: str, rng: random.Random) -> Perturbed:
    """Swap every gendered word, first name and identity term for a counterpart (consistently)."""
    chosen: dict[str, str] = {}
    kinds: set[str] = set()
    matches = list(_WORD.finditer(text))

    def counterpart(word: str, index: int) -> str | None:
        lower = word.lower()
        if lower == "her":
            # "her" is him (object) or his (possessive): possessive when a word follows directly.
            nxt = matches[index + 1] if index + 1 < len(matches) else None
            between = text[matches[index].end() : nxt.start()] if nxt else ""
            kinds.add("gender")
            return "his" if nxt and between.strip() == "" else "him"
        if lower in _GENDER:
            kinds.add("gender")
            return _GENDER[lower]
        if lower in chosen:
            return chosen[lower]
        if lower in MALE_NAMES or lower in FEMALE_NAMES:
            others = FEMALE_NAMES if lower in MALE_NAMES else MALE_NAMES
            kinds.add("names")
            chosen[lower] = rng.choice(others)
            return chosen[lower]
        if lower in _IDENTITY:
            kinds.add("identity")
            chosen[lower] = rng.choice(_IDENTITY[lower])
            return chosen[lower]
        return None

    pieces = []
    last = 0
    for index, match in enumerate(matches):
        word = match.group()
        new = counterpart(word, index)
        if new is None:
            continue
        pieces.append(text[last : match.start()])
        pieces.append(_match_case(word, new))
        last = match.end()
    if not pieces:
        return Perturbed(text, "")
    new_text = "".join(pieces) + text[last:]
    if new_text == text:
        return Perturbed(text, "")
    return Perturbed(new_text, "+".join(sorted(kinds)))


def perturb(text: str, kind: str, *, seed: int, item_id: str) -> Perturbed:
    """Perturb ``text`` for the ``robustness`` or ``fairness`` metric, deterministically.

    Args:
        text: the model input (one field's text).
        kind: ``"robustness"`` or ``"fairness"``.
        seed: the perturbed dataset's seed.
        item_id: a stable id of the item (e.g. the source item's ``external_id``).

    Returns:
        ``Perturbed(text, operation)``; ``operation`` is ``""`` and the text the same when nothing
        applied (skip the item).

    Raises:
        ValueError: for an unknown kind.
    """
    rng = item_rng(seed, f"{kind}:{item_id}")
    if kind == ROBUSTNESS:
        return perturb_robustness(text, rng)
    if kind == FAIRNESS:
        return perturb_fairness(text, rng)
    raise ValueError(f"unknown perturbation {kind!r}; choose one of {', '.join(KINDS)}")


def sample_ids(ids: list[str], k: int, *, seed: int) -> list[str]:
    """A seeded sample of at most ``k`` ids, independent of the input order (sorted first), sorted."""
    ordered = sorted(ids)
    if len(ordered) <= k:
        return ordered
    return sorted(random.Random(int(seed)).sample(ordered, k))
