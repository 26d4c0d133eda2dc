"""Continuous batching of a local chat model's answers: every answer being generated in this process for
one model decodes in one batch, joining it at the next decoding step and leaving it when done.

One generation alone uses the 2 cores badly: a decoding step of SmolLM2 for one row costs nearly what
it costs for eight (the weights are read once per step whatever the rows), so eight answers batched
gave 83.5 tokens/s in all against 26.6 for one (docs/generative.md). Until now only replays batched;
people waited in line, one answer at a time. ``ContinuousBatcher`` runs one scheduler thread per model:

* a new request is read (its prompt's "prefill", alone, so its first token is the one ``generate`` would
  give) between two decoding steps, and its key/value cache joins the batch's, left-padded to the
  batch's length (or the batch's to its own);
* each step feeds every row its last token at once (an attention mask hides the padding; each row's
  positions count its own tokens), and each row chooses its next token from its own logits: greedy
  (argmax) or sampled with its own seeded ``torch.Generator``, so a seeded answer repeats whatever rows
  share its batch;
* a row leaves at its end-of-turn token, its token budget, a stop string, or when its reader cancels
  (at the next step); the columns of padding no row needs any more are cut off.

Why not transformers' ``ContinuousBatchingManager``: measured on these 2 cores (benchmarks/
continuous_batching.py, docs/generative.md, "Continuous batching") and it lacks what the platform
records per answer: one sampling generator per request (a seeded answer must repeat), greedy and
sampled answers in one batch, stop strings.

Only a model whose key/value cache is made of plain ``DynamicLayer``s (full attention: Llama, SmolLM2,
Qwen2 without a window...) batches rows: a sliding-window or recurrent cache keeps positions of its own
that left padding would break, so such a model decodes one answer at a time here (``batchable``), as
before, and the others wait in line.

Greedy answers are the tokens ``generate`` gives alone as long as the batched step computes the same
argmax: the prefill is the same computation, and later steps differ only in the order of float sums
(tests/engine/test_batcher.py checks SmolLM2 answers token for token).

Imports no Django; torch and transformers load on first use.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

logger = logging.getLogger(__name__)

#: A finished request's ``finish``: the model ended its turn or a stop string came (``stop``), the token
#: budget (``length``), the reader cancelled (``cut_short``), the model failed (``error``).
FINISHES = ("stop", "length", "cut_short", "error")


@dataclass(eq=False)
class BatchRequest:
    """One answer for the batcher to generate.

    Args:
        prompt: the prompt's token ids (the chat template applied), at least one.
        max_new_tokens: the token budget (at least 1).
        temperature: 0 for greedy; above 0 samples from the softmax of logits / temperature.
        top_p: nucleus sampling's mass (0 < top_p <= 1), when sampling.
        top_k: sample among the k likeliest tokens only (0: all), when sampling; the model's
            generation config's (50 by transformers' default) as ``generate`` uses it.
        seed: the request's sampling generator's seed; None draws one.
        stop: strings that end the answer once its decoded text holds one (the token completing it is
            generated and delivered; the reader cuts the text before it).
        on_token: called with each new token id, in order, from the scheduler thread.
        on_end: called once when the request ends, from the scheduler thread (or from ``cancel`` of a
            request that never started).

    After it ends: ``finish`` (one of ``FINISHES``), ``error`` (the exception for ``error``),
    ``generated`` (the token ids), ``queued_s`` (seconds from ``submit`` to its prefill), ``done`` set.
    """

    prompt: Sequence[int]
    max_new_tokens: int
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0
    seed: int | None = None
    stop: Sequence[str] = ()
    on_token: Callable[[int], None] = lambda token: None
    on_end: Callable[[], None] = lambda: None
    finish: str | None = None
    error: BaseException | None = None
    generated: list[int] = field(default_factory=list)
    queued_s: float = 0.0
    started: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)
    cancelled: threading.Event = field(default_factory=threading.Event)
    _submitted: float = 0.0


def batchable(model) -> bool:
    """True when ``model``'s key/value cache (as ``DynamicCache`` builds it from its config) is made of
    plain ``DynamicLayer``s only, whose rows can be left-padded, joined and cut."""
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    try:
        layers = DynamicCache(config=model.config).layers
    except Exception:  # noqa: BLE001 - a cache transformers cannot build from the config: do not batch
        return False
    return bool(layers) and all(type(layer) is DynamicLayer for layer in layers)


class _Row:
    """A request in the running batch: its sampling generator and warpers (None for greedy), its real
    tokens in the cache, the token to feed at the next step."""

    def __init__(self, request: BatchRequest, length: int, last: int):
        self.request, self.length, self.last = request, length, last
        self.generator = self.warpers = None
        if request.temperature > 0:
            import torch
            from transformers import (
                LogitsProcessorList,
                TemperatureLogitsWarper,
                TopKLogitsWarper,
                TopPLogitsWarper,
            )

            self.generator = torch.Generator()
            if request.seed is None:
                self.generator.seed()  # a fresh, unrecorded seed
            else:
                self.generator.manual_seed(request.seed)
            # transformers' own warpers, in generate's order: temperature, top-k, top-p.
            self.warpers = LogitsProcessorList([TemperatureLogitsWarper(request.temperature)])
            if request.top_k:
                self.warpers.append(TopKLogitsWarper(request.top_k))
            if request.top_p < 1.0:
                self.warpers.append(TopPLogitsWarper(request.top_p))


class ContinuousBatcher:
    """The scheduler of one model's answers (see the module). ``submit`` a ``BatchRequest``; its tokens
    come to ``on_token`` as they are chosen; ``cancel`` ends it at the next step.

    Args:
        model: a transformers causal LM (eval mode) taking ``past_key_values``, ``attention_mask`` and
            ``position_ids``.
        tokenizer: its tokenizer (stop strings are looked for in the decoded answer).
        max_rows: the most rows decoded together (at least 1); more requests wait in submission order.
            A model that is not ``batchable`` gets 1 whatever is asked.
        eos_ids: the token ids that end a turn.

    Raises:
        ValueError: ``max_rows`` below 1.
    """

    def __init__(self, model, tokenizer, *, max_rows: int, eos_ids: Sequence[int]):
        if max_rows < 1:
            raise ValueError(f"a batch has at least 1 row, not {max_rows}")
        self.model, self.tokenizer = model, tokenizer
        self.max_rows = max_rows if batchable(model) else 1
        self.eos_ids = frozenset(int(i) for i in eos_ids)
        self._pending: deque[BatchRequest] = deque()
        self._rows: list[_Row] = []
        self._cache = None
        self._lock = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False
        # transformers 5 renamed ``past_key_values`` to ``cache``; a model's own code may take either.
        import inspect

        parameters = inspect.signature(model.forward).parameters
        self._cache_name = "cache" if "cache" in parameters else "past_key_values"
        self._last_logits_only = {"logits_to_keep": 1} if "logits_to_keep" in parameters else {}
        #: Decoding steps run and the rows they carried (for the benchmark and the tests).
        self.steps = 0
        self.row_steps = 0

    # --- the readers' side ---------------------------------------------------------------------------

    def submit(self, request: BatchRequest) -> None:
        """Queue ``request``; it joins the batch at the next step with a free row."""
        request._submitted = time.monotonic()
        with self._lock:
            self._pending.append(request)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="chat-batcher", daemon=True)
                self._thread.start()
            self._lock.notify_all()

    def cancel(self, request: BatchRequest) -> None:
        """End ``request`` at the next step, keeping what it generated (``cut_short``); a request still
        waiting ends at once with nothing. Ending an ended request does nothing."""
        request.cancelled.set()
        with self._lock:
            if request in self._pending:
                self._pending.remove(request)
                self._end(request, "cut_short")
            self._lock.notify_all()

    def ahead_of(self, request: BatchRequest) -> int:
        """How many requests wait before ``request`` for a row (0 once it has one)."""
        with self._lock:
            return self._pending.index(request) if request in self._pending else 0

    def rows(self) -> int:
        """Rows in the running batch now."""
        with self._lock:
            return len(self._rows)

    def close(self) -> None:
        """Cancel every request and stop the scheduler thread (waits for its current step)."""
        with self._lock:
            self._closed = True
            pending, self._pending = list(self._pending), deque()
            for row in self._rows:
                row.request.cancelled.set()
            self._lock.notify_all()
            thread = self._thread
        for request in pending:
            self._end(request, "cut_short")
        if thread is not None:
            thread.join(timeout=30)

    # --- the scheduler thread ---------------------------------------------------------------------------

    def _loop(self) -> None:
        import torch

        while True:
            with self._lock:
                if self._closed:
                    rows, self._rows, self._cache, self._thread = self._rows, [], None, None
                    for row in rows:
                        self._end(row.request, "cut_short")
                    return
                while not self._pending and not self._rows and not self._closed:
                    if not self._lock.wait(timeout=60.0):
                        # Idle for a minute: the thread ends; the next submit starts another.
                        if not self._pending and not self._rows:
                            self._thread = None
                            return
                newcomers = []
                while self._pending and len(self._rows) + len(newcomers) < self.max_rows:
                    newcomers.append(self._pending.popleft())
            try:
                with torch.inference_mode():
                    for request in newcomers:
                        self._admit(request)
                    self._drop_cancelled()
                    if self._rows:
                        self._step()
            except Exception as exc:  # noqa: BLE001 - every request of the batch is told, none hangs
                logger.exception("the chat batch failed")
                with self._lock:
                    rows, self._rows, self._cache = self._rows, [], None
                for row in rows:
                    row.request.error = exc
                    self._end(row.request, "error")

    def _admit(self, request: BatchRequest) -> None:
        """Prefill ``request``'s prompt alone, choose its first token, and merge its cache into the batch's."""
        import torch
        from transformers import DynamicCache

        request.queued_s = time.monotonic() - request._submitted
        request.started.set()
        if request.cancelled.is_set():
            self._end(request, "cut_short")
            return
        try:
            cache = DynamicCache(config=self.model.config)
            ids = torch.tensor([list(request.prompt)], dtype=torch.long)
            arguments = {self._cache_name: cache, **self._last_logits_only}
            logits = self.model(input_ids=ids, use_cache=True, **arguments).logits[0, -1]
        except Exception as exc:  # noqa: BLE001 - this request fails; the batch goes on
            logger.exception("a prompt could not be read")
            request.error = exc
            self._end(request, "error")
            return
        row = _Row(request, length=len(request.prompt), last=-1)
        token = self._choose(row, logits)
        if self._deliver(row, token):
            return
        row.last = token
        self._merge(cache, row)

    def _merge(self, cache, row: _Row) -> None:
        """Join ``row``'s cache (one row, its prompt's length) to the batch's, left-padding the shorter."""
        import torch

        if self._cache is None:
            self._cache, self._rows = cache, [row]
            return
        batch_length, own = self._cache.get_seq_length(), cache.get_seq_length()
        width = max(batch_length, own)
        for mine, theirs in zip(cache.layers, self._cache.layers, strict=True):
            theirs.keys = torch.cat(
                [_left_pad(theirs.keys, width - batch_length), _left_pad(mine.keys, width - own)], dim=0
            )
            theirs.values = torch.cat(
                [_left_pad(theirs.values, width - batch_length), _left_pad(mine.values, width - own)], dim=0
            )
        self._rows.append(row)

    def _step(self) -> None:
        """One decoding step of every row: feed each its last token, choose each its next one."""
        import torch

        rows, cache = self._rows, self._cache
        width = cache.get_seq_length()
        lengths = torch.tensor([row.length for row in rows], dtype=torch.long)
        columns = torch.arange(width + 1)
        # A row's real tokens are the rightmost of the cache (padding on the left), then the new one.
        mask = (columns[None, :] >= (width - lengths)[:, None]).long()
        out = self.model(
            input_ids=torch.tensor([[row.last] for row in rows], dtype=torch.long),
            attention_mask=mask,
            position_ids=lengths[:, None],
            use_cache=True,
            **{self._cache_name: cache},
        )
        self.steps += 1
        self.row_steps += len(rows)
        logits = out.logits[:, -1, :]
        keep = []
        for index, row in enumerate(rows):
            row.length += 1
            if row.request.cancelled.is_set():
                self._end(row.request, "cut_short")
                continue
            token = self._choose(row, logits[index])
            if self._deliver(row, token):
                continue
            row.last = token
            keep.append(index)
        if len(keep) < len(rows):
            self._keep(keep)

    def _drop_cancelled(self) -> None:
        """Rows whose readers left end before the next step computes them."""
        keep = []
        for index, row in enumerate(self._rows):
            if row.request.cancelled.is_set():
                self._end(row.request, "cut_short")
            else:
                keep.append(index)
        if len(keep) < len(self._rows):
            self._keep(keep)

    def _keep(self, indices: list[int]) -> None:
        """Keep only the rows at ``indices`` and cut the columns of padding every kept row has."""
        import torch

        if not indices:
            self._rows, self._cache = [], None
            return
        rows = [self._rows[i] for i in indices]
        width = self._cache.get_seq_length()
        cut = width - max(row.length for row in rows)
        select = torch.tensor(indices, dtype=torch.long)
        for layer in self._cache.layers:
            layer.keys = layer.keys.index_select(0, select)[:, :, cut:, :]
            layer.values = layer.values.index_select(0, select)[:, :, cut:, :]
        self._rows = rows

    def _choose(self, row: _Row, logits) -> int:
        """The row's next token from its logits (vocabulary-sized): argmax, or a sample drawn with the
        row's own generator after the row's warpers (temperature, top-k, top-p)."""
        import torch

        if row.warpers is None:
            return int(torch.argmax(logits))
        scores = row.warpers(None, logits.float()[None])[0]
        return int(torch.multinomial(scores.softmax(dim=-1), 1, generator=row.generator))

    def _deliver(self, row: _Row, token: int) -> bool:
        """Give ``token`` to the request; True when the request has now ended (and was ended)."""
        request = row.request
        request.generated.append(token)
        try:
            request.on_token(token)
        except Exception:  # noqa: BLE001 - a reader's failure ends its answer, not the batch
            logger.exception("a reader failed to take a token")
            self._end(request, "cut_short")
            return True
        if token in self.eos_ids:
            self._end(request, "stop")
        elif request.stop and self._stopped(request):
            self._end(request, "stop")
        elif len(request.generated) >= request.max_new_tokens:
            self._end(request, "length")
        else:
            return False
        return True

    def _stopped(self, request: BatchRequest) -> bool:
        text = self.tokenizer.decode(request.generated, skip_special_tokens=True)
        return any(stop in text for stop in request.stop)

    def _end(self, request: BatchRequest, finish: str) -> None:
        if request.done.is_set():
            return
        request.finish = finish
        request.started.set()
        request.done.set()
        try:
            request.on_end()
        except Exception:  # noqa: BLE001 - nothing more to tell a reader that failed
            logger.exception("a reader failed at the end of its answer")


def _left_pad(tensor, columns: int):
    """``tensor`` ([rows, heads, length, dim]) with ``columns`` zero columns before its length."""
    import torch

    if columns <= 0:
        return tensor
    rows, heads, _, dim = tensor.shape
    return torch.cat([tensor.new_zeros(rows, heads, columns, dim), tensor], dim=2)
