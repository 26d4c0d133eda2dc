"""Answer questions with a span model: tokenise into windows, score spans, map tokens back to code points.

transformers 5 has no question-answering pipeline, so decoding is done here:

1. ``tokenizer(question, passage, truncation="only_second", stride=doc_stride,
   return_overflowing_tokens=True, return_offsets_mapping=True)`` splits a long passage into windows of
   ``max_seq_length`` tokens overlapping by ``doc_stride``; every token keeps its ``(start, end)``
   character offsets into the passage. The tokenizers library counts these in code points (Python
   ``str`` indices), the unit the platform stores spans in.
2. In each window, over passage tokens only (``sequence_ids == 1``), the ``N_BEST`` highest start and end
   logits are paired with ``start <= end`` and ``end - start + 1 <= max_answer_tokens``; a pair's score
   is ``start_logit + end_logit``. The best pair over all windows wins.
3. The pair is widened to whole words (``whole_words``: no answer starts or ends inside a WordPiece
   word). Its characters are ``passage[offsets[start][0] : offsets[end][1]]``, widened to whole grapheme
   clusters (``core.spans.snap_to_graphemes``: the uncased tokenizer drops combining accents, so a token
   can end before its accent) and stripped of surrounding white space.

``score`` is ``softmax(start_logits)[s] * softmax(end_logits)[e]`` inside the winning window, in [0, 1].
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path

from core.spans import snap_to_graphemes, strip_span
from engine.runtime.model_files import (
    InferenceError,
    check_loading_info,
    check_model_dir,
    without_server_paths,
)
from engine.runtime.onnx_graph import ServedOnRuntime
from engine.runtime.qa_modeling import qa_settings
from engine.runtime.runtimes import TORCH

logger = logging.getLogger(__name__)

N_BEST = 20
DEFAULT_BATCH_SIZE = 16


def encode_windows(tokenizer, questions: Sequence[str], passages: Sequence[str], settings: dict[str, int]):
    """Tokenise (question, passage) pairs into overlapping windows (see the module docstring).

    Returns the ``BatchEncoding`` (lists, not tensors) with ``overflow_to_sample_mapping`` (window ->
    pair index) and ``offset_mapping``; ``encoding.sequence_ids(i)`` tells passage tokens (1) apart.
    Questions longer than ``max_question_tokens`` tokens are cut first.
    """
    limit = settings["max_question_tokens"]
    cut = []
    for question in questions:
        q = question.strip() or "?"
        ids = tokenizer(q, add_special_tokens=False, return_offsets_mapping=True)
        if len(ids["input_ids"]) > limit:
            q = q[: ids["offset_mapping"][limit - 1][1]]
        cut.append(q)
    return tokenizer(
        cut,
        list(passages),
        truncation="only_second",
        max_length=settings["max_seq_length"],
        stride=settings["doc_stride"],
        return_overflowing_tokens=True,
        return_offsets_mapping=True,
        padding=False,
    )


def best_span(
    start_logits: Sequence[float],
    end_logits: Sequence[float],
    passage_tokens: Sequence[bool],
    *,
    max_answer_tokens: int,
    n_best: int = N_BEST,
) -> tuple[int, int, float] | None:
    """The highest-scoring ``(start_token, end_token, start_logit + end_logit)`` of one window.

    Only tokens with ``passage_tokens[i]`` true can start or end an answer; ``start <= end`` and at most
    ``max_answer_tokens`` tokens. None when the window has no passage token.
    """
    candidates = [i for i, ok in enumerate(passage_tokens) if ok]
    if not candidates:
        return None
    starts = sorted(candidates, key=lambda i: start_logits[i], reverse=True)[:n_best]
    ends = sorted(candidates, key=lambda i: end_logits[i], reverse=True)[:n_best]
    best: tuple[int, int, float] | None = None
    for s in starts:
        for e in ends:
            if e < s or e - s + 1 > max_answer_tokens:
                continue
            score = float(start_logits[s]) + float(end_logits[e])
            if best is None or score > best[2]:
                best = (s, e, score)
    if best is None:  # every top end lies before every top start: take the best single token
        s = starts[0]
        best = (s, s, float(start_logits[s]) + float(end_logits[s]))
    return best


def whole_words(word_ids: Sequence[int | None], start: int, end: int) -> tuple[int, int]:
    """Widen a token span to whole words: back to the first piece of the start token's word and on to
    the last piece of the end token's word (WordPiece splits "Panthers" into "pan", "##thers"; an
    answer never starts or ends inside a word)."""
    word = word_ids[start]
    while start > 0 and word is not None and word_ids[start - 1] == word:
        start -= 1
    word = word_ids[end]
    while end + 1 < len(word_ids) and word is not None and word_ids[end + 1] == word:
        end += 1
    return start, end


class SpanPredictor(ServedOnRuntime):
    """A loaded span (extractive QA) model; built by ``inference.get_classifier`` for a QA directory.

    Same surface as ``inference.Classifier`` where the platform needs it: ``path``, ``model``,
    ``tokenizer``, ``labels`` (empty: spans have no labels), ``runtime``, ``graph``, ``weight_bytes``,
    ``predict_batch``. With an ONNX runtime the start and end logits come from the exported ``span``
    graph (``onnx_graph``); decoding is the same.
    """

    labels: list[str] = []

    def __init__(self, path: str | Path, *, allow_pickle: bool = False, runtime: str = TORCH) -> None:
        directory = check_model_dir(path, allow_pickle=allow_pickle)
        try:
            import torch  # noqa: F401
            from transformers import AutoModelForQuestionAnswering, AutoTokenizer
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()
            self.tokenizer = AutoTokenizer.from_pretrained(str(directory), local_files_only=True)
            self.model, loading_info = AutoModelForQuestionAnswering.from_pretrained(
                str(directory),
                local_files_only=True,
                use_safetensors=None if allow_pickle else True,
                output_loading_info=True,
            )
        except Exception as exc:
            logger.warning("could not load the QA model in %s", directory, exc_info=True)
            detail = without_server_paths(f"{type(exc).__name__}: {exc}", directory)
            raise InferenceError(f"could not load the QA model: {detail}") from exc
        # A checkpoint without its span head would answer with random spans: refuse it.
        check_loading_info(loading_info, type(self.model).__name__)
        if not getattr(self.tokenizer, "is_fast", False):
            raise InferenceError("the QA model needs a fast tokenizer (tokenizer.json)")
        self.model.eval()
        self.path = directory
        self.settings = qa_settings(self.model.config)
        self.settings["max_seq_length"] = min(
            self.settings["max_seq_length"], int(self.model.config.max_position_embeddings)
        )
        self.preprocessing: dict = {}
        self._lock = threading.Lock()
        self._attach_graph(runtime)

    def _span_logits(self, batch, torch):
        """(start_logits, end_logits), each (windows, tokens) float tensors, by torch or ONNX."""
        if self.graph is None:
            out = self.model(**batch)
            return out.start_logits, out.end_logits
        start, end = self.graph.run({name: tensor.numpy() for name, tensor in batch.items()})
        return torch.from_numpy(start), torch.from_numpy(end)

    def predict_batch(self, texts: list, batch_size: int = DEFAULT_BATCH_SIZE) -> list[dict]:
        """Answer ``(passage, question)`` pairs (the QA task's ``model_input_fields`` order).

        Returns:
            One ``{"answer": str, "answer_start": int, "score": float}`` per pair, in order;
            ``answer_start`` is a code-point offset into that pair's passage and
            ``passage[answer_start : answer_start + len(answer)] == answer``.

        Raises:
            InferenceError: an input is not a (passage, question) pair of strings, or the model fails.
        """
        if not texts:
            return []
        for n, item in enumerate(texts):
            if not (isinstance(item, tuple) and len(item) == 2 and all(isinstance(t, str) for t in item)):
                raise InferenceError(f"input {n} is not a (passage, question) pair of texts")
        try:
            return self._predict([q for _, q in texts], [p for p, _ in texts], batch_size)
        except InferenceError:
            raise
        except Exception as exc:
            logger.warning("the QA model in %s failed to predict", self.path, exc_info=True)
            detail = without_server_paths(f"{type(exc).__name__}: {exc}", self.path)
            raise InferenceError(f"the model failed to predict: {detail}") from exc

    def _predict(self, questions: list[str], passages: list[str], batch_size: int) -> list[dict]:
        import torch

        with self._lock, torch.inference_mode():
            encoding = encode_windows(self.tokenizer, questions, passages, self.settings)
            n_windows = len(encoding["input_ids"])
            best: list[tuple[float, int, int, float] | None] = [None] * len(passages)
            order = sorted(range(n_windows), key=lambda i: len(encoding["input_ids"][i]))
            for start in range(0, n_windows, max(1, batch_size)):
                idx = order[start : start + max(1, batch_size)]
                batch = self.tokenizer.pad(
                    {
                        k: [encoding[k][i] for i in idx]
                        for k in ("input_ids", "token_type_ids", "attention_mask")
                    },
                    return_tensors="pt",
                )
                start_logits, end_logits = self._span_logits(batch, torch)
                if not (torch.isfinite(start_logits).all() and torch.isfinite(end_logits).all()):
                    raise InferenceError("the model produced non-finite scores (NaN or infinity)")
                for row, window in enumerate(idx):
                    length = len(encoding["input_ids"][window])
                    sequence_ids = encoding.sequence_ids(window)
                    found = best_span(
                        start_logits[row, :length].tolist(),
                        end_logits[row, :length].tolist(),
                        [sid == 1 for sid in sequence_ids],
                        max_answer_tokens=self.settings["max_answer_tokens"],
                    )
                    if found is None:
                        continue
                    s, e, score = found
                    pair = encoding["overflow_to_sample_mapping"][window]
                    if best[pair] is None or score > best[pair][0]:
                        # Over the window's own tokens: the padding a batch adds is no part of it.
                        start_log_probs = torch.log_softmax(start_logits[row, :length].float(), dim=-1)
                        end_log_probs = torch.log_softmax(end_logits[row, :length].float(), dim=-1)
                        probability = float(torch.exp(start_log_probs[s] + end_log_probs[e]))
                        s, e = whole_words(encoding.word_ids(window), s, e)
                        offsets = encoding["offset_mapping"][window]
                        best[pair] = (score, offsets[s][0], offsets[e][1], probability)
        results = []
        for passage, found in zip(passages, best, strict=True):
            if found is None:  # an empty passage: nothing to point at
                results.append({"answer": "", "answer_start": 0, "score": 0.0})
                continue
            _, char_start, char_end, probability = found
            char_start, char_end = snap_to_graphemes(passage, char_start, char_end)
            char_start, char_end = strip_span(passage, char_start, char_end)
            results.append(
                {
                    "answer": passage[char_start:char_end],
                    "answer_start": char_start,
                    "score": round(probability, 6),
                }
            )
        return results
