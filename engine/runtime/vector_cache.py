"""Sentence vectors of ONNX ``vectors`` graphs, kept across models that run byte-identical graphs.

A model trained by the quick recipe is a frozen encoder with its own head; its ONNX export
(``onnx_export``, kind ``vectors``) holds only the encoder and the pooling, so every target of a task
trained that way exports the same graph file, byte for byte (the demo's three hate-speech targets do).
Evaluating them on the same datasets, or checking their exports on overlapping held-apart inputs,
would run the same encoder on the same tokens once per model. This cache keeps the graph's output
vector of each input row, keyed by

    (sha256 of the graph file, the row's token ids without padding)

so a row is encoded once per process for every model whose graph has that digest. The key is the
token ids, not the text: a pair task's segment is cut by the pair's truncation, so the same premise
can reach the encoder as different tokens beside different hypotheses. A vector depends only on its
row's tokens (attention and pooling are masked; rows are padded on the right), so a cached vector
equals a fresh one up to float rounding of another batch width (about 1e-7 relative).

What must not read it: throughput. ``uncached()`` turns the cache off for the calling context (the
evaluation's timed passes and warm-up run under it), so items/s always measures the forward.

Bound: ``DYNABENCH_VECTOR_CACHE_BYTES`` (default 64 MiB; 0 turns the cache off), counted as
``embeddings.EmbeddingCache`` counts it (vector bytes + key bytes + a fixed overhead per entry): about
30,000 MiniLM rows of 100 tokens. Least recently used rows leave first. One cache per process: each
gunicorn worker and job worker has its own.
"""

from __future__ import annotations

import contextvars
import threading
from contextlib import contextmanager

from engine.config import settings

_off: contextvars.ContextVar[bool] = contextvars.ContextVar("vector_cache_off", default=False)
_lock = threading.Lock()
_cache = None


def _store():
    """The process's ``EmbeddingCache`` (made on first use, with the configured bound), or None when
    the bound is 0."""
    global _cache
    max_bytes = int(getattr(settings, "DYNABENCH_VECTOR_CACHE_BYTES", 64 * 2**20))
    if max_bytes <= 0:
        return None
    with _lock:
        if _cache is None or _cache.max_bytes != max_bytes:
            from engine.runtime.embeddings import EmbeddingCache  # imports torch

            _cache = EmbeddingCache(max_bytes)
        return _cache


def active():
    """The cache to read and fill now, or None: turned off (``uncached``, or a bound of 0)."""
    return None if _off.get() else _store()


@contextmanager
def uncached():
    """Within this block, in this thread (or task), graphs run on every row: nothing is read from or
    added to the cache. For timing the forward (``leaderboards.evaluation.time_passes``)."""
    token = _off.set(True)
    try:
        yield
    finally:
        _off.reset(token)


def may_read(predictor) -> bool:
    """Whether ``predictor`` (an ``inference.Classifier``, a span predictor or None) reads this cache
    now: it runs an ONNX ``vectors`` graph and the cache is active."""
    graph = getattr(predictor, "graph", None)
    return graph is not None and graph.kind == "vectors" and active() is not None


def stats() -> dict:
    """``{"hits", "misses", "entries", "bytes"}`` of this process's cache (zeros when off)."""
    cache = _store()
    if cache is None:
        return {"hits": 0, "misses": 0, "entries": 0, "bytes": 0}
    return {"hits": cache.hits, "misses": cache.misses, "entries": len(cache), "bytes": cache.nbytes}


def clear() -> None:
    """Forget every vector (tests; a changed bound makes a new cache by itself)."""
    with _lock:
        if _cache is not None:
            _cache.clear()


def cached_vectors(run, digest: str, ids, mask):
    """The graph's (rows, hidden) float32 vectors of one padded batch, read from the cache where it
    has them; ``run(ids, mask)`` (numpy int64 arrays, padded to the longest row given) computes the
    others, which are then added.

    Args:
        run: the graph call on a (k, width) batch, returning a (k, hidden) float32 array.
        digest: the graph's sha256 (``onnx_graph.OnnxGraph.digest``).
        ids, mask: (rows, width) integer torch tensors; rows padded on the right.

    Returns:
        A (rows, hidden) float32 torch tensor. Without an active cache, or when a row is not padded on
        the right (its mask is not a prefix of ones), the whole batch runs as it is.
    """
    import torch

    cache = active()
    if cache is None or ids.shape[0] == 0:
        return torch.from_numpy(run(ids.numpy(), mask.numpy()))
    lengths = mask.sum(dim=1)
    positions = torch.arange(mask.shape[1]).unsqueeze(0)
    if not bool(((positions < lengths.unsqueeze(1)) == mask.bool()).all()):
        return torch.from_numpy(run(ids.numpy(), mask.numpy()))
    scope = ("onnx-vectors", digest)
    keys = [ids[i, : int(lengths[i])].to(torch.int32).numpy().tobytes() for i in range(ids.shape[0])]
    found = [cache.get(scope, key) for key in keys]
    todo = [i for i, vector in enumerate(found) if vector is None]
    if todo:
        width = max(int(lengths[i]) for i in todo)
        fresh = torch.from_numpy(run(ids[todo, :width].numpy(), mask[todo, :width].numpy()))
        for j, i in enumerate(todo):
            cache.put(scope, keys[i], fresh[j])
            found[i] = fresh[j]
    return torch.stack(found).float()
