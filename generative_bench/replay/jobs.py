"""The replay job (docs/benchmarking.md, "Replay"): a round's settled prompts sent to one generative
model, every answer stored as a ``ReplayAnswer`` (re-exported by generative_bench/jobs.py, so its
dotted path is ``generative_bench.jobs.run_replay_job``; queued by ``services.request_replay``).

The items (``selectors``): the round's settled conversations, and its validated multiple-choice items.

* **Conversations**, ``BATCH_SIZE`` at a time through ``models_registry.generative.generate_batch`` (a
  local model batched, a remote one one by one). With ``keep``, the model reads the passage, the human
  turns and the target's stored answers, and gives the last answer. With ``regenerate``, it gives every
  answer in turn on its own earlier answers: turn k of every conversation of a batch is generated
  together, then turn k + 1.
* **Multiple-choice items**: the model picks an option (``models_registry.generative.choose``), as the
  round's target did when the item was written; the pick and whether it is the answer are stored.

Rules of the job:

* **Resumable.** Items with an ``ok`` answer are skipped, so a replay asked for again after a cancel,
  a failure or a killed worker does only what is left.
* **Retried.** An item that fails (the model errs, a remote server fails after its client's retries, a
  conversation too long for the context) is tried again after the others, up to ``MAX_ATTEMPTS`` times
  a run, then left ``failed`` with its error; ``attempts`` counts its tries over every run.
* **Few writes.** The answers of a batch are stored, then the replay's counts and progress once.
* **Cancel.** An owner's cancel (status ``cancelled``) stops the job before its next batch.
* **Within the worker's time.** A run hands over to a new one (queued again) after ``run_seconds()``,
  half the job cluster's timeout, so no run is killed for running long.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Iterable
from decimal import Decimal

from django.db.models import Count, F, Q
from django.utils import timezone

from annotation.chat_format import context_message
from annotation.models import Conversation, Example
from annotation.red_team.choice_items import choice_messages
from core.job_queue import enqueue, worker_timeout_seconds
from models_registry.serving import (
    DEFAULT_BATCH_SIZE,
    Generation,
    InferenceError,
    choose,
    generate_batch,
    without_server_paths,
)

from ..models import Replay, ReplayAnswer
from . import selectors

logger = logging.getLogger(__name__)

#: Conversations answered together (one batch of a local model; a cancel is seen between batches).
BATCH_SIZE = DEFAULT_BATCH_SIZE
#: Tries of one item in one run before it is left failed.
MAX_ATTEMPTS = 3
MAX_ERROR = 5000
#: A cost is stored to the column's 8 decimal places.
COST_PLACES = Decimal("0.00000001")


class ItemError(Exception):
    """One item could not be answered; the message is stored as its error."""


def run_seconds() -> float:
    """How long one run of the job works before it queues the next: half the job cluster's timeout
    (``core.job_queue.worker_timeout_seconds``), or ``selectors.STALE_SECONDS / 2`` without one."""
    return (worker_timeout_seconds() or selectors.STALE_SECONDS) / 2


def _cost(value) -> Decimal | None:
    """A generation's cost (a float) as a Decimal of its shortest text, to the column's places."""
    if value is None or isinstance(value, bool):
        return None
    return Decimal(repr(value)).quantize(COST_PLACES)


def keep_messages(example: Example, cfg) -> list[dict]:
    """What ``keep`` sends for ``example``'s last answer: the context as the system message
    (``annotation.chat_format.context_message``, as the red-teaming page builds it), then its stored
    messages without the target's last answer.

    Raises:
        ItemError: the stored conversation does not alternate user and assistant messages, ending with
            an answer.
    """
    turns = _stored_turns(example)
    system = context_message(cfg, example.context)
    messages = [system] if system else []
    for prompt, answer in turns[:-1]:
        messages += [{"role": "user", "content": prompt}, {"role": "assistant", "content": answer}]
    return [*messages, {"role": "user", "content": turns[-1][0]}]


def regenerate_messages(example: Example, cfg, answers: list[str]) -> list[dict]:
    """What ``regenerate`` sends for ``example``'s turn ``len(answers)``: the context as the system
    message, each earlier human turn followed by the model's own answer to it (``answers``), then the
    next human turn.

    Raises:
        ItemError: as ``keep_messages``, or ``answers`` as many as the human turns.
    """
    turns = _stored_turns(example)
    if len(answers) >= len(turns):
        raise ItemError("every turn of this conversation is answered")
    system = context_message(cfg, example.context)
    messages = [system] if system else []
    for (prompt, _), answer in zip(turns, answers, strict=False):
        messages += [{"role": "user", "content": prompt}, {"role": "assistant", "content": answer}]
    return [*messages, {"role": "user", "content": turns[len(answers)][0]}]


def _stored_turns(example: Example) -> list[tuple[str, str]]:
    """The (human message, target's answer) pairs of a stored conversation (``inputs["messages"]``,
    user and assistant alternating, system messages left out)."""
    messages = [
        m
        for m in (example.inputs or {}).get("messages", [])
        if isinstance(m, dict) and m.get("role") != "system"
    ]
    pairs = []
    for i in range(0, len(messages) - 1, 2):
        user, assistant = messages[i], messages[i + 1]
        if user.get("role") != "user" or assistant.get("role") != "assistant":
            break
        if not isinstance(user.get("content"), str) or not isinstance(assistant.get("content"), str):
            break
        pairs.append((user["content"], assistant["content"]))
    if not pairs or len(pairs) * 2 != len(messages):
        raise ItemError("the stored conversation is not user and assistant messages in turn")
    return pairs


def _failure(generation: Generation) -> str | None:
    """Why ``generation`` is no answer (None when it is one): it ended in an error, or a timeout or a
    cut (finish reason ``cut_short``) with no text. A partial answer (cut at the token budget, by the
    timeout or cut short) is an answer, as a red-teaming turn's is."""
    if generation.finish_reason == "error":
        return generation.error or "the model failed while answering"
    if not generation.text and generation.finish_reason == "timeout":
        return generation.error or "the model gave no answer in time"
    if not generation.text and generation.finish_reason == "cut_short":
        return "the answer was cut short before any text"
    return None


def _answer_fields(messages: list[dict], generations: list[Generation]) -> dict:
    """A conversation's stored fields from its answers' generations (the last one answers it)."""
    last = generations[-1]
    tokens = [g.output_tokens for g in generations]
    costs = [_cost(g.cost) for g in generations]
    return {
        "messages": messages,
        "answer": last.text,
        "answers": [g.text for g in generations],
        "generation": last.as_dict(),
        "tokens": None if None in tokens else sum(tokens),
        "cost": None if None in costs else sum(costs, Decimal(0)),
        "seconds": sum(g.latency_ms for g in generations) / 1000,
        "first_token_seconds": None if last.first_token_ms is None else last.first_token_ms / 1000,
        "picked": None,
        "correct": None,
    }


def _held_with(replay: Replay, example_ids: list[int]) -> set[int]:
    """The examples among ``example_ids`` whose conversation was held with ``replay.model`` (one query)."""
    return set(
        Conversation.objects.filter(example_id__in=example_ids, model_id=replay.model_id).values_list(
            "example_id", flat=True
        )
    )


#: Finish reasons of a whole answer: the model ended its turn, or reached its token budget.
COMPLETE = ("stop", "length")


def _greedy(decoding) -> bool:
    return isinstance(decoding, dict) and decoding.get("temperature") == 0


def reproduction(example: Example, generation: Generation) -> dict | None:
    """Whether a replayed answer reproduces the stored one byte for byte, when it should: the same model
    (the caller checks), the ``keep`` messages, and greedy decoding both times (temperature 0, recorded in
    the stored answer's generation record and in the replay's). ``{"identical": bool, "stored_sha256",
    "replayed_sha256"}`` (sha256 of the UTF-8 texts), or None when the two are not comparable: not both
    greedy, or either cut short (a finish reason other than ``COMPLETE``: a timeout, an error, a reader
    gone) (docs/generative.md, "Provenance")."""
    stored_records = (example.metadata or {}).get("generations") or []
    if (
        not stored_records
        or not _greedy(stored_records[-1].get("decoding"))
        or not _greedy(generation.decoding)
        # An answer cut short (a timeout under load, the reader gone, an error) is not the model's whole
        # answer: comparing it would blame the model for the machine.
        or stored_records[-1].get("finish_reason") not in COMPLETE
        or generation.finish_reason not in COMPLETE
    ):
        return None
    try:
        stored = _stored_turns(example)[-1][1]
    except ItemError:
        return None
    return {
        "identical": generation.text == stored,
        "stored_sha256": hashlib.sha256(stored.encode("utf-8")).hexdigest(),
        "replayed_sha256": hashlib.sha256(generation.text.encode("utf-8")).hexdigest(),
    }


def answer_conversations(replay: Replay, examples: list[Example]) -> dict[int, dict | str]:
    """``replay.model``'s answers to ``examples`` (conversations): ``{example id: stored fields}`` for
    each answered one, ``{example id: error}`` for each that failed."""
    cfg, model = replay.round.task.cfg, replay.model
    outcome: dict[int, dict | str] = {}
    if replay.target_turns == Replay.TargetTurns.KEEP:
        asked = {}
        for example in examples:
            try:
                asked[example.pk] = keep_messages(example, cfg)
            except ItemError as exc:
                outcome[example.pk] = str(exc)
        generations = generate_batch(model, list(asked.values()), batch_size=BATCH_SIZE)
        own = _held_with(replay, [pk for pk in asked])
        by_pk = {example.pk: example for example in examples}
        for (pk, messages), generation in zip(asked.items(), generations, strict=True):
            outcome[pk] = _failure(generation) or _answer_fields(messages, [generation])
            if isinstance(outcome[pk], dict) and pk in own:
                check = reproduction(by_pk[pk], generation)
                if check is not None:
                    outcome[pk]["generation"]["reproduction"] = check
        return outcome
    # regenerate: turn k of every conversation still going, together, then turn k + 1.
    going: dict[int, tuple[Example, list[Generation], list[dict]]] = {}
    for example in examples:
        try:
            _stored_turns(example)
        except ItemError as exc:
            outcome[example.pk] = str(exc)
            continue
        going[example.pk] = (example, [], [])
    while going:
        asked = {
            pk: regenerate_messages(example, cfg, [g.text for g in done])
            for pk, (example, done, _) in going.items()
        }
        generations = generate_batch(model, list(asked.values()), batch_size=BATCH_SIZE)
        for (pk, messages), generation in zip(asked.items(), generations, strict=True):
            example, done, _ = going[pk]
            error = _failure(generation)
            if error:
                outcome[pk] = f"turn {len(done) + 1}: {error}"
                del going[pk]
                continue
            done.append(generation)
            going[pk] = (example, done, messages)
            if len(done) == len(_stored_turns(example)):
                outcome[pk] = _answer_fields(messages, done)
                del going[pk]
    return outcome


def answer_choice_item(replay: Replay, example: Example) -> dict | str:
    """``replay.model``'s pick on the multiple-choice item ``example``: its stored fields, or the error."""
    inputs, target = example.inputs or {}, example.target if isinstance(example.target, dict) else {}
    options = inputs.get("options")
    if not isinstance(options, list) or not isinstance(inputs.get("question"), str):
        return "the stored item has no question and options"
    messages = choice_messages(example.context, inputs["question"], replay.round)
    started = time.perf_counter()
    try:
        scores = choose(replay.model, messages, options)
    except InferenceError as exc:
        return str(exc) or type(exc).__name__
    seconds = time.perf_counter() - started
    return {
        "messages": messages,
        "answer": options[scores.picked],
        "answers": [options[scores.picked]],
        "generation": {
            "method": scores.method,
            "log_likelihoods": list(scores.log_likelihoods),
            "normalised": list(scores.normalised),
            "picked_unnormalised": scores.picked_unnormalised,
            "latency_ms": seconds * 1000,
        },
        "tokens": None,
        "cost": None,
        "seconds": seconds,
        "first_token_seconds": None,
        "picked": scores.picked,
        "correct": scores.picked == target.get("answer"),
    }


def _store(replay: Replay, outcome: dict[int, dict | str]) -> None:
    """Store each item's answer (``ok``) or error (``failed``), one row per item: a new row, or the
    item's row of an earlier try updated with one more attempt."""
    existing = set(
        ReplayAnswer.objects.filter(replay=replay, example_id__in=list(outcome)).values_list(
            "example_id", flat=True
        )
    )
    for example_id, result in outcome.items():
        if isinstance(result, str):
            fields = {"status": ReplayAnswer.Status.FAILED, "error": result[:MAX_ERROR]}
        else:
            fields = {**result, "status": ReplayAnswer.Status.OK, "error": ""}
        if example_id in existing:
            ReplayAnswer.objects.filter(replay=replay, example_id=example_id).update(
                **fields, attempts=F("attempts") + 1, updated_at=timezone.now()
            )
        else:
            ReplayAnswer.objects.create(replay=replay, example_id=example_id, attempts=1, **fields)


def _report(replay_id: int, total: int, note: str = "") -> bool:
    """Store the replay's counts and progress; False when it is no longer running (cancelled)."""
    counts = ReplayAnswer.objects.filter(replay_id=replay_id).aggregate(
        done=Count("pk", filter=Q(status=ReplayAnswer.Status.OK)),
        failed=Count("pk", filter=Q(status=ReplayAnswer.Status.FAILED)),
    )
    progress = f"{counts['done']} of {total} answered, {counts['failed']} failed" + (
        f"; {note}" if note else ""
    )
    running = Replay.objects.filter(pk=replay_id, status=Replay.Status.RUNNING).update(
        done=counts["done"], failed=counts["failed"], progress=progress[:200]
    )
    if not running:  # cancelled meanwhile: the counts still say what is stored, the progress stays
        Replay.objects.filter(pk=replay_id).update(done=counts["done"], failed=counts["failed"])
    return bool(running)


def _chunks(items: list, size: int) -> Iterable[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _finish(replay_id: int, status: str, **fields) -> None:
    Replay.objects.filter(pk=replay_id, status=Replay.Status.RUNNING).update(
        status=status, finished_at=timezone.now(), **fields
    )


def run_replay_job(replay_id: int) -> str:
    """Run replay ``replay_id`` (the module's rules): answer every item of its round without an ``ok``
    answer, storing each answer as it comes (a batch at a time).

    Claimed with a conditional ``UPDATE ... WHERE status = 'queued'``, so a job delivered twice runs
    once; a replay that is not queued is left as it is. Ends ``done`` (every item tried; ``failed``
    counts those left failed), ``failed`` (items to answer, and not one answered: ``error`` holds the
    first item's error; or the job itself broke), ``cancelled`` (by an owner, between batches) or
    ``queued`` again (handed over to a new run after ``run_seconds()``). Raises nothing to the worker.

    Returns:
        The replay's status when the run ends (or its current status when it was not claimed).
    """
    claimed = Replay.objects.filter(pk=replay_id, status=Replay.Status.QUEUED).update(
        status=Replay.Status.RUNNING, started_at=timezone.now(), progress="started", error=""
    )
    if not claimed:
        current = Replay.objects.filter(pk=replay_id).values_list("status", flat=True).first()
        logger.info("replay %s not started: it is %s", replay_id, current or "missing")
        return current or "missing"
    replay = Replay.objects.select_related("round__task", "model__task").get(pk=replay_id)
    try:
        return _run(replay, deadline=time.monotonic() + run_seconds())
    except Exception as exc:  # noqa: BLE001 - the owner must see every failure in the admin
        logger.exception("replay %s failed", replay_id)
        _finish(replay_id, Replay.Status.FAILED, error=f"{type(exc).__name__}: {exc}"[:MAX_ERROR])
        return Replay.Status.FAILED


def _run(replay: Replay, *, deadline: float) -> str:
    conversations = list(selectors.replayed_conversations(replay.round))
    items = list(selectors.replayed_choice_items(replay.round))
    total = len(conversations) + len(items)
    Replay.objects.filter(pk=replay.pk).update(total=total)
    answered = set(
        ReplayAnswer.objects.filter(replay=replay, status=ReplayAnswer.Status.OK).values_list(
            "example_id", flat=True
        )
    )
    # Similar lengths batched together pad little (the character count stands for the token count).
    conversations = sorted(
        (e for e in conversations if e.pk not in answered),
        key=lambda e: sum(len(m.get("content") or "") for m in (e.inputs or {}).get("messages", [])),
    )
    items = [e for e in items if e.pk not in answered]
    if not _report(replay.pk, total):
        return _status_of(replay.pk)
    ran = False
    for attempt in range(1, MAX_ATTEMPTS + 1):
        if not conversations and not items:
            break
        note = (
            f"try {attempt} of {MAX_ATTEMPTS} of {len(conversations) + len(items)} left"
            if attempt > 1
            else ""
        )
        failed: list[Example] = []
        work: list[tuple[list[Example], Callable[[list[Example]], dict[int, dict | str]]]] = [
            (chunk, lambda chunk: answer_conversations(replay, chunk))
            for chunk in _chunks(conversations, BATCH_SIZE)
        ] + [
            (chunk, lambda chunk: {e.pk: answer_choice_item(replay, e) for e in chunk})
            for chunk in _chunks(items, BATCH_SIZE)
        ]
        for chunk, answer in work:
            # At least one batch a run, so a run always gets somewhere before it hands over.
            if ran and time.monotonic() > deadline:
                return _hand_over(replay.pk, total)
            ran = True
            try:
                outcome = answer(chunk)
            except Exception as exc:  # noqa: BLE001 - a crash fails the batch's items, with why, not the job
                logger.exception("replay %s: a batch failed", replay.pk)
                error = without_server_paths(f"{type(exc).__name__}: {exc}")
                outcome = {e.pk: error for e in chunk}
            _store(replay, outcome)
            failed += [e for e in chunk if isinstance(outcome.get(e.pk), str)]
            if not _report(replay.pk, total, note):
                return _status_of(replay.pk)  # cancelled meanwhile
        failed_ids = {e.pk for e in failed}
        conversations = [e for e in conversations if e.pk in failed_ids]
        items = [e for e in items if e.pk in failed_ids]
    counts = Replay.objects.filter(pk=replay.pk).values("done", "failed").first() or {}
    if total and not counts.get("done") and counts.get("failed"):
        first = ReplayAnswer.objects.filter(replay=replay, status=ReplayAnswer.Status.FAILED).order_by("pk")
        error = first.values_list("error", flat=True).first() or ""
        _finish(
            replay.pk,
            Replay.Status.FAILED,
            error=f"no item was answered; the first error: {error}"[:MAX_ERROR],
        )
    else:
        _finish(replay.pk, Replay.Status.DONE)
    return _status_of(replay.pk)


def _hand_over(replay_id: int, total: int) -> str:
    """End this run before the worker's timeout and queue the next (the conditional update keeps a
    cancel that came meanwhile)."""
    if Replay.objects.filter(pk=replay_id, status=Replay.Status.RUNNING).update(
        status=Replay.Status.QUEUED, progress=f"handed over to a new run; {total} items in all"
    ):
        enqueue("generative_bench.jobs.run_replay_job", replay_id, task_name=f"replay {replay_id}")
    return _status_of(replay_id)


def _status_of(replay_id: int) -> str:
    return Replay.objects.filter(pk=replay_id).values_list("status", flat=True).first() or "missing"
