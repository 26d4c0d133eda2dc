"""Why the model decided: token attributions by integrated gradients, for local classifier models.

Method (Sundararajan, Taly & Yan 2017, "Axiomatic Attribution for Deep Networks", eq. 1 and 3):
integrated gradients on the output of the classifier's word-embedding layer
(``model.get_input_embeddings()``), computed with Captum's ``LayerIntegratedGradients``:

    attr_i = (e_i - e'_i) · ∫_0^1 ∂F(e' + α (e - e')) / ∂e_i dα

where ``e`` is the (tokens, hidden) embedding of the input, ``e'`` that of the baseline and ``F`` the
logit of the target label. A token's score is ``attr_i`` summed over the hidden dimension.

* Baseline: the same token sequence with every non-special token replaced by the tokenizer's pad token
  (``[PAD]``); ``[CLS]``, ``[SEP]`` and padding are kept, with the same attention mask. So special tokens
  and padding have ``e_i == e'_i`` and get exactly 0 (they are not shown).
* Target: the predicted label's logit (the arg-max at the input), or the label asked for.
* ``N_STEPS = 50`` Gauss-Legendre points (Captum's default rule), ``INTERNAL_BATCH_SIZE = 50``
  interpolated inputs per forward pass (one pass per text).
* Completeness (the axiom of the paper, proposition 1): ``sum_i attr_i = F(x) - F(x')``. Captum reports
  the gap as the convergence delta; it is within ``tolerance(F(x) - F(x'))`` = ``ABS_TOLERANCE +
  REL_TOLERANCE * |F(x) - F(x')|`` (0.02 + 2 %). When the first pass misses it, the explanation is
  computed again once with ``RETRY_STEPS`` (200) points; ``within_tolerance`` says whether it holds.
* The text is preprocessed and truncated exactly as ``runtime_classifier.Classifier.predict_batch`` does it
  (``max_length`` tokens). Offsets are code points into the ORIGINAL text: the preprocessing renders
  emoji as their names ("🐷" -> " pig face "), and the scores of the name's tokens are summed onto the
  emoji's characters; tokens whose characters overlap (a ligature split by NFKC) are merged likewise.
* Shown (``Explanation.words``, the page and the top list): whole words of the ORIGINAL text, not word
  pieces. The text is cut at Unicode word boundaries (UAX #29, the ``regex`` package's ``WORD`` flag);
  punctuation touching a word joins it ("vermin." and "e-mail" are one word each), while two letter,
  number or emoji segments side by side stay apart (an emoji stands alone: "love🌈" is "love" + "🌈").
  A word's score is the sum of the scores of the tokens whose characters fall in it (a token across two
  words joins them), so the word scores still sum to ``sum_i attr_i`` (completeness). One ``<mark>``
  per word keeps the letters of Arabic and Hebrew words joined.

Not explained (an ``Explanation`` with ``unavailable`` set, never an exception): remote endpoint models
(they answer labels over HTTP, with no gradients), extractive QA (span) models, a model with no weights
here, a model whose tokenizer gives no character offsets, and a model that fails or takes longer than
the inference timeout.

``explain_folder`` explains one text of a model folder within the inference timeout; the registry's
``models_registry.explanations.explain`` explains a registered model's inputs and caches them for
``CACHE_SECONDS``, keyed by the model's pk, the identity of its files (``model_files.files_identity``, so
a retrained model is explained afresh), the target asked for and a SHA-256 of the text(s).

Explanations run on a copy of the model of their own (``_explainer``: at most ``EXPLAINER_COPIES``
per process, least recently used dropped), not on the classifier that serves live predictions: an
explanation takes a second or more and hooks the embedding layer, and the annotators' predictions must
neither wait for it nor pass through its hooks. The price is one more copy of the weights in memory
(about 90 MB for MiniLM) per explained model.

torch and captum are imported lazily (inside the functions), as in ``inference``.
"""

from __future__ import annotations

import logging
import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any

from engine.config import settings
from engine.runtime import classifier as runtime_classifier
from engine.runtime.model_files import InferenceError, files_identity, without_server_paths
from engine.runtime.preprocessing import (
    _INVISIBLE,
    _WHITESPACE,
    DEFAULT_PREPROCESSING,
    _emoji_name,
    check_spec,
    preprocess,
)
from engine.runtime.qa_inference import SpanPredictor

logger = logging.getLogger(__name__)

N_STEPS = 50
RETRY_STEPS = 200
INTERNAL_BATCH_SIZE = 50
ABS_TOLERANCE = 0.02
REL_TOLERANCE = 0.02
#: How many texts one API call may ask to explain (each costs ``N_STEPS`` forward and backward passes).
MAX_EXPLAIN_INPUTS = 8
CACHE_SECONDS = 7 * 24 * 3600
CACHE_VERSION = 2  # 2: input_logits, baseline_logits and labels added

REMOTE = "This model runs on a remote endpoint, which answers labels only: no explanation available."
SPAN = "Extractive QA (span) models are not explained: no explanation available."
NO_WEIGHTS = "This model has no weights on this server: no explanation available."
NO_OFFSETS = "This model's tokenizer gives no character offsets: no explanation available."


class UnknownLabel(ValueError):
    """A target label that is not one of the model's labels."""


def tolerance(logit_difference: float) -> float:
    """The completeness tolerance for ``F(x) - F(x')`` (logits): ``0.02 + 0.02 * |difference|``."""
    return ABS_TOLERANCE + REL_TOLERANCE * abs(logit_difference)


@dataclass(frozen=True)
class TokenScore:
    """One highlighted span of an original text and its attribution.

    Attributes:
        token: ``text[start:end]`` of the original text (an emoji itself, not its name).
        start / end: code points into the original text of ``side`` (end exclusive).
        score: summed attribution of its model tokens (logit units; > 0 pushed towards the target).
        pieces: the model tokens merged here (e.g. ``("pig", "face")`` for 🐷).
        side: 0 for the (first) text, 1 for the second text of a pair.
    """

    token: str
    start: int
    end: int
    score: float
    pieces: tuple[str, ...]
    side: int = 0


@dataclass(frozen=True)
class WordScore:
    """One whole word of an original text (module docstring, "Shown") and its attribution.

    Attributes:
        word: ``text[start:end]`` of the original text of ``side``.
        start / end: code points into that text (end exclusive).
        score: the sum of the ``TokenScore.score`` of its tokens (logit units; > 0 towards the target).
        side: 0 for the (first) text, 1 for the second text of a pair.
    """

    word: str
    start: int
    end: int
    score: float
    side: int = 0


@dataclass(frozen=True)
class Position:
    """One model token position: its piece, kind (``"token"``, ``"special"`` or ``"padding"``) and
    raw attribution (summed over the hidden dimension)."""

    piece: str
    kind: str
    score: float


def _scored_span(text: str, span, names, text_key: str) -> dict[str, Any]:
    """One token or word of ``as_api``: ``{text_key: text, start, end, score, field}``."""
    field_name = names[span.side] if span.side < len(names) else str(span.side)
    return {text_key: text, "start": span.start, "end": span.end, "score": span.score, "field": field_name}


@dataclass(frozen=True)
class Explanation:
    """Integrated-gradients attributions of one input, or why there are none.

    Attributes:
        unavailable: "" when explained; else the reason (and every other field is empty).
        target_label: the label whose logit is attributed.
        tokens: the spans shown, in text order (special tokens and padding excluded).
        positions: every model token position of the encoded batch row, for checks.
        logit_input / logit_baseline: ``F(x)`` and ``F(x')`` of the target label.
        attribution_sum: ``sum_i attr_i`` over all positions.
        convergence_delta: Captum's ``attribution_sum - (logit_input - logit_baseline)``.
        tolerance: the bound ``|convergence_delta|`` is checked against (``tolerance()``).
        within_tolerance: whether completeness holds within it.
        n_steps: integration points used (``N_STEPS``, or ``RETRY_STEPS`` after a retry).
        truncated: the text was longer than the model reads; the rest has no attributions.
        texts: the original text(s) explained (side 0, and side 1 of a pair).
        fields: the input field names of side 0 and 1 (set by ``explain``).
        labels: the model's labels, in the order of the two logit vectors below.
        input_logits / baseline_logits: every label's logit at the input and at the baseline.
    """

    unavailable: str = ""
    target_label: str = ""
    tokens: tuple[TokenScore, ...] = ()
    positions: tuple[Position, ...] = ()
    logit_input: float | None = None
    logit_baseline: float | None = None
    attribution_sum: float | None = None
    convergence_delta: float | None = None
    tolerance: float | None = None
    within_tolerance: bool | None = None
    n_steps: int = 0
    truncated: bool = False
    texts: tuple[str, ...] = ()
    fields: tuple[str, ...] = field(default_factory=tuple)
    labels: tuple[str, ...] = ()
    input_logits: tuple[float, ...] = ()
    baseline_logits: tuple[float, ...] = ()

    @property
    def available(self) -> bool:
        """True when there are attributions."""
        return not self.unavailable

    @property
    def words(self) -> list[WordScore]:
        """The whole words of the original text(s) that carry attributions, in text order (side 0
        first): ``words_of(text, tokens of that side)`` for each side (module docstring, "Shown")."""
        out: list[WordScore] = []
        for side, text in enumerate(self.texts):
            out.extend(words_of(text, [t for t in self.tokens if t.side == side], side))
        return out

    def top(self, n: int = 5) -> list[WordScore]:
        """The ``n`` words of largest absolute score, largest first (ties in text order)."""
        return sorted(self.words, key=lambda w: -abs(w.score))[:n]

    def display(self) -> list[dict[str, Any]]:
        """Per text, for the ``_attributions.html`` partial: ``{"field": name, "parts": [{"text", "css",
        "score"}]}``: the original text cut at its highlighted words (``words``), in order, newlines
        kept. ``css`` is ``attr-pos-N`` / ``attr-neg-N`` with strength N = ceil(5 |score| / max |score|)
        in 1..5 (the maximum over all words of the explanation), "" for the text between words."""
        import math

        words = self.words
        biggest = max((abs(w.score) for w in words), default=0.0) or 1.0
        names = self.fields or ()
        shown = []
        for side, text in enumerate(self.texts):
            parts, at = [], 0
            for word in (w for w in words if w.side == side):
                if word.start > at:
                    parts.append({"text": text[at : word.start], "css": "", "score": None})
                level = min(5, max(1, math.ceil(5 * abs(word.score) / biggest)))
                sign = "pos" if word.score >= 0 else "neg"
                parts.append({"text": word.word, "css": f"attr-{sign}-{level}", "score": word.score})
                at = word.end
            if at < len(text):
                parts.append({"text": text[at:], "css": "", "score": None})
            shown.append({"field": names[side] if side < len(names) else "", "parts": parts})
        return shown

    def summary(self) -> dict[str, Any] | None:
        """Where the model stands with every word blanked and with the text, for the partial's words.

        Returns None without the logit vectors (an explanation cached before they existed), else
        ``{"target", "baseline_label", "baseline_probability", "input_probability", "baseline_percent",
        "input_percent", "baseline_logit",
        "input_logit", "others": [(label, baseline logit)], "moved", "binary", "other"}``: probabilities
        are softmax of the logit vectors (as ``runtime_classifier.Classifier.predict_batch``), in 0..1; logits
        are signed strings with 2 decimals ("+1.40", "−0.20", U+2212 minus); ``moved`` is
        ``logit_input - logit_baseline`` (signed string); ``other`` the other label of a two-label model.
        """
        if not self.labels or len(self.baseline_logits) != len(self.labels) or not self.input_logits:
            return None
        index = self.labels.index(self.target_label)
        at_baseline, at_input = _softmax(self.baseline_logits), _softmax(self.input_logits)
        leaning = max(range(len(self.labels)), key=lambda i: self.baseline_logits[i])
        others = [
            (label, signed(self.baseline_logits[i])) for i, label in enumerate(self.labels) if i != index
        ]
        return {
            "target": self.target_label,
            "baseline_label": self.labels[leaning],
            "baseline_probability": at_baseline[leaning],
            "input_probability": at_input[index],
            "baseline_percent": f"{100 * at_baseline[leaning]:.1f}",
            "input_percent": f"{100 * at_input[index]:.1f}",
            "baseline_logit": signed(self.baseline_logits[index]),
            "input_logit": signed(self.input_logits[index]),
            "others": others,
            "moved": signed(self.input_logits[index] - self.baseline_logits[index]),
            "binary": len(self.labels) == 2,
            "other": others[0][0] if len(others) == 1 else "",
        }

    def as_api(self) -> dict[str, Any]:
        """The API's view: ``{"attributions": [{token, start, end, score, field}], "words": [{word, start,
        end, score, field}] (``words``: whole words, each the sum of its tokens), "target_label",
        "logit_input", "logit_baseline", "attribution_sum", "convergence_delta", "tolerance",
        "n_steps", "truncated"}``, or ``{"attributions": None, "explanation_unavailable": reason}``."""
        if self.unavailable:
            return {"attributions": None, "explanation_unavailable": self.unavailable}
        names = self.fields or ("text", "text_b")
        return {
            "attributions": [_scored_span(t.token, t, names, "token") for t in self.tokens],
            "words": [_scored_span(w.word, w, names, "word") for w in self.words],
            "target_label": self.target_label,
            "logit_input": self.logit_input,
            "logit_baseline": self.logit_baseline,
            "attribution_sum": self.attribution_sum,
            "convergence_delta": self.convergence_delta,
            "tolerance": self.tolerance,
            "n_steps": self.n_steps,
            "truncated": self.truncated,
        }


def signed(value: float) -> str:
    """``value`` with 2 decimals and its sign: ``+1.40``, ``−0.20`` (U+2212 minus), ``0.00``."""
    text = f"{abs(value):.2f}"
    if text == "0.00":
        return text
    return ("+" if value > 0 else "\u2212") + text


def _softmax(logits: Sequence[float]) -> list[float]:
    import math

    top = max(logits)
    exps = [math.exp(x - top) for x in logits]
    total = sum(exps)
    return [e / total for e in exps]


# --- whole words of the original text ------------------------------------------------------------------


def _is_glue(segment: str) -> bool:
    """A segment of only punctuation or symbols, none of them emoji: it joins the word it touches."""
    import regex

    return not regex.search(r"[\p{L}\p{N}\p{Extended_Pictographic}\p{Regional_Indicator}]", segment)


def word_spans(text: str) -> list[tuple[int, int]]:
    """The ``(start, end)`` code points of the words of ``text`` (module docstring, "Shown").

    ``text`` is cut at Unicode word boundaries (UAX #29); white space separates words; within a run of
    non-space characters, a cut is kept only between two segments that both hold a letter, a number or
    an emoji (so "love🌈" is two words, "vermin." and "e-mail" one each, "我爱你" three).
    """
    import regex

    spans: list[tuple[int, int]] = []
    at, previous_glue = 0, True
    for segment in regex.split(r"\b", text, flags=regex.WORD | regex.V1):
        if not segment:
            continue
        start, end = at, at + len(segment)
        at = end
        if segment.isspace():
            previous_glue = True
            spans.append((start, start))  # a separator: no word joins across it
            continue
        glue = _is_glue(segment)
        if spans and spans[-1][1] == start and spans[-1][1] > spans[-1][0] and (glue or previous_glue):
            spans[-1] = (spans[-1][0], end)
        else:
            spans.append((start, end))
        previous_glue = glue
    return [(s, e) for s, e in spans if e > s]


def words_of(text: str, tokens: Sequence[TokenScore], side: int = 0) -> list[WordScore]:
    """The words of ``text`` (``word_spans``) that hold at least one of ``tokens``, each scored with the
    sum of the scores of the tokens that overlap it.

    A token overlapping several words joins them into one (so every token counts exactly once and the
    word scores sum to the token scores); a token overlapping no word (it should not happen) is a word
    of its own span. Returns the words in text order.
    """
    spans = word_spans(text)
    groups: list[list[Any]] = []  # [start, end, score]
    index = 0
    for token in sorted(tokens, key=lambda t: (t.start, t.end)):
        while index < len(spans) and spans[index][1] <= token.start:
            index += 1
        covered = [s for s in spans[index:] if s[0] < token.end and s[1] > token.start]
        start = min([token.start] + [s[0] for s in covered])
        end = max([token.end] + [s[1] for s in covered])
        if groups and start < groups[-1][1]:
            groups[-1][1] = max(groups[-1][1], end)
            groups[-1][2] += token.score
        else:
            groups.append([start, end, token.score])
    return [WordScore(text[s:e], s, e, float(score), side) for s, e, score in groups]


# --- from the preprocessed text back to the original ----------------------------------------------------


def aligned_preprocess(text: str, spec: dict | None) -> tuple[str, list[tuple[int, int]]]:
    """``preprocess(text, spec)`` (``spec`` None: ``DEFAULT_PREPROCESSING``) plus, for each of its characters, the ``(start, end)`` code points of
    the original characters it came from.

    Every character of an emoji's name (and the spaces around it) maps to the whole emoji (sequence);
    a character produced by Unicode normalisation maps to its grapheme cluster; a collapsed run of white
    space to the run. If the step-by-step result differs from ``preprocess`` (it should not), the map is
    rebuilt by aligning the two strings with ``difflib`` instead.
    """
    import emoji
    import regex

    full = check_spec(DEFAULT_PREPROCESSING if spec is None else spec)  # None: as ``preprocess``
    pieces: list[tuple[str, int, int]] = []  # (chars, source start, source end)
    if full["emoji"] == "names":
        import emoji.tokenizer as emoji_tokenizer

        position = 0
        matches = emoji_tokenizer.tokenize(text, keep_zwj=emoji.config.replace_emoji_keep_zwj)
        if emoji.config.replace_emoji_keep_zwj:
            matches = emoji_tokenizer.filter_tokens(matches, emoji_only=False, join_emoji=True)
        for match in matches:
            size = len(match.chars)
            if isinstance(match.value, emoji.EmojiMatch):
                name = _emoji_name(match.value.emoji, match.value.data_copy())
                pieces.append((name, position, position + size))
            else:
                pieces.append((match.value.translate(_INVISIBLE), position, position + size))
            position += size
    else:
        pieces = [(ch, i, i + 1) for i, ch in enumerate(text)]
    chars = [(ch, s, e) for chunk, s, e in pieces for ch in chunk]
    if full["unicode_normalization"]:
        form = full["unicode_normalization"]
        joined = "".join(ch for ch, _, _ in chars)
        normalised: list[tuple[str, int, int]] = []
        offset = 0
        for cluster in regex.findall(r"\X", joined):
            sources = chars[offset : offset + len(cluster)]
            offset += len(cluster)
            start, end = min(s for _, s, _ in sources), max(e for _, _, e in sources)
            normalised.extend((ch, start, end) for ch in unicodedata.normalize(form, cluster))
        chars = normalised
    if full["collapse_whitespace"]:
        collapsed: list[tuple[str, int, int]] = []
        for ch, s, e in chars:
            if _WHITESPACE.fullmatch(ch):
                if collapsed and collapsed[-1][0] == " " and collapsed[-1][3]:
                    previous = collapsed[-1]
                    collapsed[-1] = (" ", previous[1], max(previous[2], e), True)
                else:
                    collapsed.append((" ", s, e, True))
            else:
                collapsed.append((ch, s, e, False))
        while collapsed and collapsed[0][3]:
            collapsed.pop(0)
        while collapsed and collapsed[-1][3]:
            collapsed.pop()
        chars = [(ch, s, e) for ch, s, e, _ in collapsed]
    out = "".join(ch for ch, _, _ in chars)
    expected = preprocess(text, full)
    if out != expected:  # pragma: no cover - a safety net for a preprocessing this walk does not mirror
        logger.warning("aligned preprocessing differs from preprocess(); aligning with difflib")
        return expected, _difflib_map(text, expected)
    return out, [(s, e) for _, s, e in chars]


def _difflib_map(original: str, processed: str) -> list[tuple[int, int]]:
    import difflib

    spans: list[tuple[int, int]] = [(0, len(original))] * len(processed)
    matcher = difflib.SequenceMatcher(a=processed, b=original, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        for k in range(i1, i2):
            spans[k] = (j1 + k - i1, j1 + k - i1 + 1) if tag == "equal" else (j1, max(j2, j1 + 1))
    return [(min(s, len(original)), min(e, len(original))) for s, e in spans]


def _merge(tokens: list[TokenScore], original: str) -> list[TokenScore]:
    """Merge tokens whose original spans overlap (an emoji's name, a split ligature); sum their scores."""
    merged: list[TokenScore] = []
    for token in sorted(tokens, key=lambda t: (t.start, t.end)):
        if merged and token.start < merged[-1].end:
            last = merged[-1]
            start, end = last.start, max(last.end, token.end)
            merged[-1] = TokenScore(
                original[start:end],
                start,
                end,
                last.score + token.score,
                last.pieces + token.pieces,
                last.side,
            )
        else:
            merged.append(token)
    return merged


# --- integrated gradients -------------------------------------------------------------------------------


def integrated_gradients(
    forward: Callable,
    layer,
    input_ids,
    baseline_ids,
    additional_args: tuple,
    target: int,
    n_steps: int = N_STEPS,
):
    """Captum's ``LayerIntegratedGradients`` of ``forward(input_ids, *additional_args)[:, target]`` at
    the output of ``layer`` (called exactly once per forward pass).

    Args:
        forward: maps (batch, tokens) long ids and ``additional_args`` to (batch, labels) logits.
        layer: the ``nn.Module`` whose output is attributed (the word embeddings).
        input_ids / baseline_ids: (1, tokens) long tensors.
        target: the output column attributed.
        n_steps: Gauss-Legendre integration points.

    Returns:
        ``(scores, delta)``: (1, tokens) float64 attributions summed over the layer's last dimension,
        and Captum's convergence delta (a float).
    """
    import torch
    from captum.attr import LayerIntegratedGradients

    lig = LayerIntegratedGradients(forward, layer)
    with torch.enable_grad():
        attributions, delta = lig.attribute(
            inputs=input_ids,
            baselines=baseline_ids,
            additional_forward_args=additional_args,
            target=target,
            n_steps=n_steps,
            internal_batch_size=INTERNAL_BATCH_SIZE,
            return_convergence_delta=True,
        )
    return attributions.detach().double().sum(dim=-1), float(delta.detach().double().reshape(-1)[0])


def _pair_mean_pool_forward(model):
    """``forward(ids, mask, types)`` of a ``"pair"`` ``MeanPoolClassifier`` whose word embeddings are
    looked up ONCE on the joint sequence, then split like ``modeling.split_pair`` (the model's own forward
    looks them up twice, which ``LayerIntegratedGradients`` cannot hook)."""
    import torch

    from engine.runtime.modeling import mean_pool, pair_features

    words = model.get_input_embeddings()
    pad_id = int(model.config.pad_token_id or 0)

    def encode(embeds, mask):
        out = model.bert(inputs_embeds=embeds, attention_mask=mask, token_type_ids=torch.zeros_like(mask))
        return mean_pool(out.last_hidden_state, mask)

    def forward(input_ids, attention_mask, token_type_ids):
        embeds = words(input_ids)
        pad = words.weight[pad_id].to(embeds.dtype)  # (hidden,): read, not a second call of the layer
        real = attention_mask.bool()
        in_b = real & token_type_ids.bool()
        len_a, len_b = (real & ~token_type_ids.bool()).sum(dim=1), in_b.sum(dim=1)
        width_a = int(len_a.max())
        mask_a = (torch.arange(width_a).unsqueeze(0) < len_a.unsqueeze(1)).long()
        emb_a = torch.where(mask_a.bool().unsqueeze(-1), embeds[:, :width_a], pad)
        width_b = int(len_b.max()) + 1
        positions_b = torch.arange(width_b).unsqueeze(0)
        source = (len_a.unsqueeze(1) + positions_b - 1).clamp(min=0, max=input_ids.shape[1] - 1)
        emb_b = torch.gather(embeds, 1, source.unsqueeze(-1).expand(-1, -1, embeds.shape[-1]))
        emb_b = torch.cat([embeds[:, :1], emb_b[:, 1:]], dim=1)
        mask_b = (positions_b <= len_b.unsqueeze(1)).long()
        emb_b = torch.where(mask_b.bool().unsqueeze(-1), emb_b, pad)
        return model.classifier(model.dropout(pair_features(encode(emb_a, mask_a), encode(emb_b, mask_b))))

    return forward


def forward_for(model) -> Callable:
    """``forward(input_ids, attention_mask, token_type_ids) -> logits`` that looks the word embeddings up
    once per call: the model itself, or ``_pair_mean_pool_forward`` for a pair ``MeanPoolClassifier``."""
    from engine.runtime.modeling import MeanPoolClassifier

    if isinstance(model, MeanPoolClassifier) and getattr(model.config, "pooling", "mean") == "pair":
        return _pair_mean_pool_forward(model)

    def forward(input_ids, attention_mask, token_type_ids):
        return model(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).logits

    return forward


def attribute(classifier, text, *, target: str | None = None, pad: bool = False) -> Explanation:
    """Integrated-gradients attributions of one text (or ``(a, b)`` pair) for a loaded classifier.

    Args:
        classifier: an ``runtime_classifier.Classifier`` (``runtime_classifier.get_classifier``).
        text: the raw text (or pair), as ``predict_batch`` takes it.
        target: a label of the classifier, or None for the predicted one.
        pad: pad the encoding to ``classifier.max_length`` as a padded batch row would be (padding gets
            exactly 0 and changes no logit); off by default, since one text needs no padding.

    Returns:
        An ``Explanation`` (module docstring); ``unavailable`` set when the tokenizer has no offsets.

    Raises:
        UnknownLabel: ``target`` is not one of ``classifier.labels`` (a ``ValueError``).
        InferenceError: preprocessing, tokenising or the model fails.
    """
    import torch

    if target is not None and target not in classifier.labels:
        raise UnknownLabel(f"unknown label {target!r}; the model's labels are {classifier.labels}")
    tokenizer = classifier.tokenizer
    if not getattr(tokenizer, "is_fast", False):
        return Explanation(unavailable=NO_OFFSETS)
    sides = list(text) if isinstance(text, tuple | list) else [text]
    aligned = [aligned_preprocess(side, classifier.preprocessing) for side in sides]
    prepared = [a for a, _ in aligned]
    encoded = tokenizer(
        *prepared,
        truncation=True,
        max_length=classifier.max_length,
        padding="max_length" if pad else False,
        return_offsets_mapping=True,
        return_special_tokens_mask=True,
        return_tensors="pt",
    )
    input_ids = encoded["input_ids"]
    attention_mask = encoded["attention_mask"]
    token_type_ids = encoded.get("token_type_ids")
    if token_type_ids is None:
        token_type_ids = torch.zeros_like(input_ids)
    special = encoded["special_tokens_mask"].bool() | ~attention_mask.bool()
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    baseline_ids = torch.where(special, input_ids, torch.full_like(input_ids, pad_id))
    model = classifier.model
    forward = forward_for(model)
    args = (attention_mask, token_type_ids)
    with classifier._lock:  # one call at a time on this copy (``_explainer``; runtime_classifier.Classifier)
        with torch.no_grad():
            logits = forward(input_ids, *args).double()
            logits_baseline = forward(baseline_ids, *args).double()
        index = classifier.labels.index(target) if target is not None else int(logits[0].argmax())
        logit_input, logit_baseline = float(logits[0, index]), float(logits_baseline[0, index])
        bound = tolerance(logit_input - logit_baseline)
        for n_steps in (N_STEPS, RETRY_STEPS):
            scores, delta = integrated_gradients(
                forward, model.get_input_embeddings(), input_ids, baseline_ids, args, index, n_steps
            )
            if abs(delta) <= bound:
                break
    if not torch.isfinite(scores).all():
        raise InferenceError("the attributions are not finite (NaN or infinity)")
    row = scores[0].tolist()
    pieces = tokenizer.convert_ids_to_tokens(input_ids[0].tolist())
    sequence_ids = encoded.sequence_ids(0)
    offsets = encoded["offset_mapping"][0].tolist()
    positions, tokens = [], []
    for i, (piece, score) in enumerate(zip(pieces, row, strict=True)):
        kind = "padding" if not attention_mask[0, i] else "special" if special[0, i] else "token"
        positions.append(Position(piece, kind, float(score)))
        side = sequence_ids[i]
        start, end = offsets[i]
        if kind != "token" or side is None or end <= start:
            continue
        spans = aligned[side][1]
        original_start, original_end = spans[start][0], spans[end - 1][1]
        tokens.append(
            TokenScore(
                sides[side][original_start:original_end],
                original_start,
                original_end,
                float(score),
                (piece,),
                side,
            )
        )
    merged = []
    for side, original in enumerate(sides):
        merged.extend(_merge([t for t in tokens if t.side == side], original))
    last_end = [
        max((offsets[i][1] for i in range(len(pieces)) if sequence_ids[i] == s), default=0)
        for s in range(len(sides))
    ]
    truncated = any(prepared[s][last_end[s] :].strip() for s in range(len(sides)))
    total = float(sum(row))
    return Explanation(
        target_label=classifier.labels[index],
        tokens=tuple(merged),
        positions=tuple(positions),
        logit_input=logit_input,
        logit_baseline=logit_baseline,
        attribution_sum=total,
        convergence_delta=delta,
        tolerance=bound,
        within_tolerance=abs(delta) <= bound,
        n_steps=n_steps,
        truncated=truncated,
        texts=tuple(sides),
        labels=tuple(classifier.labels),
        input_logits=tuple(float(x) for x in logits[0].tolist()),
        baseline_logits=tuple(float(x) for x in logits_baseline[0].tolist()),
    )


# --- for a model folder, with a timeout -----------------------------------------------------------------


EXPLAINER_COPIES = 2
_explainers: OrderedDict[str, tuple[Any, Any]] = OrderedDict()
_explainers_lock = threading.Lock()


def _explainer(path: str, allow_pickle: bool):
    """This process's explanation copy of the model folder at ``path`` (an ``runtime_classifier.Classifier``,
    or a ``SpanPredictor`` for a span model), loaded apart from the live one (module docstring) and again
    when its files change (``files_identity``)."""
    key = runtime_classifier._key(path)
    with _explainers_lock:  # explanations are rare: one load at a time is enough
        identity = files_identity(key)
        hit = _explainers.get(key)
        if hit is not None and hit[0] == identity:
            _explainers.move_to_end(key)
            return hit[1]
        loaded = runtime_classifier._load(key, allow_pickle)
        _explainers[key] = (identity, loaded)
        while len(_explainers) > EXPLAINER_COPIES:
            _explainers.popitem(last=False)
        return loaded


def clear_explainers() -> None:
    """Forget the explanation copies (for tests)."""
    with _explainers_lock:
        _explainers.clear()


def explain_folder(
    path: str, allow_pickle: bool, text, target: str | None, *, label: str
) -> tuple[Explanation, bool]:
    """The explanation of the model folder at ``path`` for one text (a string, or a pair as
    ``runtime_classifier.texts_for_inputs`` gives it), and whether it may be cached.

    Waits at most ``DYNABENCH_INFERENCE_TIMEOUT_SECONDS``; a slower one gives an ``Explanation`` with
    ``unavailable`` set and ``False`` (it may come another time). ``label`` names the model in the log.

    Never raises for the model's sake: a folder that fails to load or answer gives an ``Explanation``
    with ``unavailable`` set (its message without server paths) and ``False``.

    Raises:
        UnknownLabel: ``target`` is not one of the model's labels (a ``ValueError``).
    """
    timeout = float(settings.DYNABENCH_INFERENCE_TIMEOUT_SECONDS)

    def call():
        classifier = _explainer(path, allow_pickle)
        if isinstance(classifier, SpanPredictor):
            return Explanation(unavailable=SPAN)
        return attribute(classifier, text, target=target)

    future = runtime_classifier._calls.submit(call)
    try:
        return future.result(timeout=timeout if timeout > 0 else None), True
    except FutureTimeout:
        future.cancel()
        logger.warning("model %s gave no explanation within %s s", label, timeout)
        return Explanation(unavailable=f"No explanation within {timeout:g} s (the inference timeout)."), False
    except UnknownLabel:
        raise
    except Exception as exc:  # noqa: BLE001 - the model's failure is reported, not raised
        logger.warning("model %s could not explain", label, exc_info=True)
        detail = str(exc) if isinstance(exc, InferenceError) else f"{type(exc).__name__}: {exc}"
        detail = without_server_paths(detail, path or None)
        return Explanation(unavailable=f"The model could not explain its answer: {detail}"), False
