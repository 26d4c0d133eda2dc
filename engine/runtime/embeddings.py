"""Embedding texts with a frozen backbone for the quick recipe, and the bounded in-process cache that
lets the demo's targets of rounds 1, 1-2 and 1-3 embed round 1 once (``EmbeddingCache``).
"""

from __future__ import annotations

import json
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path

import torch

from engine.runtime.model_files import files_identity
from engine.runtime.modeling import MeanPoolClassifier

MAX_INPUT_TOKENS = 128


EMBED_BATCH_SIZE = 64


Text = str | tuple[str, str]


Progress = Callable[[str], None]


def say(progress: Progress | None, message: str) -> None:
    """Tell ``progress`` (when given) one line."""
    if progress is not None:
        progress(message)


def encode(tokenizer, texts: Sequence[Text]) -> dict[str, torch.Tensor]:
    """Tokenise texts (or text pairs) into one padded batch of at most ``MAX_INPUT_TOKENS`` tokens each."""
    if texts and isinstance(texts[0], tuple):
        return tokenizer(
            [a for a, _ in texts],
            [b for _, b in texts],
            truncation=True,
            max_length=MAX_INPUT_TOKENS,
            padding=True,
            return_tensors="pt",
        )
    return tokenizer(
        list(texts), truncation=True, max_length=MAX_INPUT_TOKENS, padding=True, return_tensors="pt"
    )


def length_order(texts: Sequence[Text]) -> list[int]:
    """Indices of ``texts`` from shortest to longest (ties by index), so a batch pads little."""
    return sorted(range(len(texts)), key=lambda i: (len(str(texts[i])), i))


class EmbeddingCache:
    """A bounded, thread-safe, in-process LRU store of frozen-backbone vectors for the quick recipe.

    Targets of one task are often trained in one process on overlapping data (the demo's NLI targets on
    rounds (1), (1, 2) and (1, 2, 3) embed round 1 three times); with this cache each text is embedded
    once per process. Keys are ``(scope, text)``: ``scope`` (``embedding_scope``) names the backbone's
    files (path and ``model_files.files_identity``: size, mtime and inode of config, weights, tokenizer),
    the preprocessing spec, the pooling and the token limit, and ``text`` is the preprocessed string or
    (a, b) pair. So a changed backbone, spec, pooling or limit never reuses a vector.

    Bound: the sum over entries of the vector's bytes (float32: 4 x feature_size, 1,536 bytes for
    MiniLM mean vectors and 6,144 for pair features), the text's characters and ``ENTRY_OVERHEAD``
    bytes stays at most ``max_bytes`` (least recently used entries leave first). The default,
    ``EMBEDDING_CACHE_MAX_BYTES`` = 64 MiB, holds about 10,000 MiniLM pair vectors or 40,000 single-text
    ones. ``max_bytes=0`` stores nothing.

    A cached vector was computed in another batch than a fresh one would be; the two agree up to float
    rounding (about 1e-7 relative), so a training run's result can depend on the cache at that level.
    """

    ENTRY_OVERHEAD = 256

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[tuple, torch.Tensor] = OrderedDict()
        self._sizes: dict[tuple, int] = {}
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @property
    def nbytes(self) -> int:
        """Bytes counted against ``max_bytes`` now."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)

    def _size(self, text: Text, vector: torch.Tensor) -> int:
        chars = sum(map(len, text)) if isinstance(text, tuple) else len(text)
        return vector.numel() * vector.element_size() + chars + self.ENTRY_OVERHEAD

    def get(self, scope: tuple, text: Text) -> torch.Tensor | None:
        """The cached vector of ``text`` in ``scope`` (marked recently used), or None."""
        key = (scope, text)
        with self._lock:
            vector = self._entries.get(key)
            if vector is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return vector

    def put(self, scope: tuple, text: Text, vector: torch.Tensor) -> None:
        """Store a copy of ``vector`` (1-D) for ``text``, evicting least recently used entries to fit."""
        key = (scope, text)
        size = self._size(text, vector)
        if size > self.max_bytes:
            return
        with self._lock:
            if key in self._entries:
                self._bytes -= self._sizes.pop(key)
                del self._entries[key]
            while self._entries and self._bytes + size > self.max_bytes:
                old, _ = self._entries.popitem(last=False)
                self._bytes -= self._sizes.pop(old)
            self._entries[key] = vector.detach().clone()
            self._sizes[key] = size
            self._bytes += size

    def clear(self) -> None:
        """Forget every vector and reset the hit and miss counts."""
        with self._lock:
            self._entries.clear()
            self._sizes.clear()
            self._bytes = 0
            self.hits = self.misses = 0


EMBEDDING_CACHE_MAX_BYTES = 64 * 2**20


#: The process-wide cache the quick recipe uses (``EmbeddingCache``).
EMBEDDING_CACHE = EmbeddingCache(EMBEDDING_CACHE_MAX_BYTES)


def embedding_scope(backbone_path: str | Path, spec: dict, pooling: str, max_tokens: int) -> tuple:
    """The part of an ``EmbeddingCache`` key shared by every text embedded by one frozen backbone."""

    resolved = str(Path(backbone_path).expanduser().resolve())
    return (resolved, files_identity(resolved), json.dumps(spec, sort_keys=True), pooling, max_tokens)


def embed_texts(
    model: MeanPoolClassifier,
    tokenizer,
    texts: Sequence[Text],
    *,
    batch_size: int = EMBED_BATCH_SIZE,
    progress: Progress | None = None,
    what: str = "texts",
    cache: EmbeddingCache | None = None,
    scope: tuple | None = None,
) -> torch.Tensor:
    """The head's input vectors of already preprocessed texts: a (len(texts), feature_size) float tensor.

    ``feature_size`` is ``hidden`` for a ``"mean"`` model and ``4 * hidden`` for a ``"pair"`` one
    (``MeanPoolClassifier.embed``). With ``cache`` and ``scope`` (``embedding_scope`` of the model's
    untouched backbone), texts already in the cache are not embedded again and new vectors are added.
    """
    model.eval()
    out = torch.zeros(len(texts), model.config.feature_size)
    use_cache = cache is not None and scope is not None
    todo = []
    for i, text in enumerate(texts):
        vector = cache.get(scope, text) if use_cache else None
        if vector is None:
            todo.append(i)
        else:
            out[i] = vector
    if use_cache and len(todo) < len(texts):
        say(progress, f"embedding {what}: {len(texts) - len(todo)} of {len(texts)} vectors from the cache")
    order = [todo[j] for j in length_order([texts[i] for i in todo])]
    n_batches = math.ceil(len(order) / batch_size)
    with torch.inference_mode():
        for b, start in enumerate(range(0, len(order), batch_size)):
            idx = order[start : start + batch_size]
            encoded = encode(tokenizer, [texts[i] for i in idx])
            out[idx] = model.embed(**encoded).float()
            if use_cache:
                for i in idx:
                    cache.put(scope, texts[i], out[i])
            if (b + 1) % 20 == 0 or b + 1 == n_batches:
                say(progress, f"embedding {what}: batch {b + 1}/{n_batches}")
    return out
