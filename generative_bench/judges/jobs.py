"""The judge's job: it answers the task's rubric for every output people judged or may judge
(docs/benchmarking.md, "Judges"). Queued by ``services.run_judge``; re-exported by
``generative_bench.jobs`` (dotted path ``generative_bench.jobs.run_judge_job``).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass

from django.conf import settings
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from annotation.chat_format import context_message
from annotation.models import Example
from models_registry.models import RegisteredModel
from models_registry.serving import (
    Decoding,
    Generation,
    InferenceError,
    choose_each,
    generate_batch,
    without_server_paths,
)
from tasks.rubric import Rubric

from ..models import Judge, JudgeVerdict, ReplayAnswer
from . import prompts

logger = logging.getLogger(__name__)

#: Outputs asked of the judge at once (a local model's batch), and judged between two writes of the
#: judge's progress.
BATCH_SIZE = 8
MAX_ERROR = 2000


def judge_max_new_tokens(rubric: Rubric) -> int:
    """The judge's token budget for one reply: room for the JSON object of ``rubric``'s answers (a key,
    an answer and punctuation take well under 24 tokens per question) and a short preamble a chat model
    may write before it (48 tokens); at most 512."""
    return min(512, 48 + 24 * len(rubric.questions))


def judge_decoding(rubric: Rubric) -> Decoding:
    """Greedy decoding (temperature 0: the same output gets the same verdict on a local judge) with
    ``judge_max_new_tokens``; the judge model's own stored decoding settings are not used."""
    return Decoding(temperature=0.0, max_new_tokens=judge_max_new_tokens(rubric))


@dataclass
class _Item:
    """One output to judge: a human-judged conversation (``example``) or a replayed answer."""

    example: Example | None
    replay_answer: ReplayAnswer | None
    context: str
    conversation: list[dict]
    output: str | None  # None: the stored item holds no answer to judge


def human_conversations(task) -> Q:
    """The filter of the task's human-judged conversations on ``Example``: mode ``conversation``,
    written here (source ``created``), with their author's verdict, not retracted."""
    return Q(
        round__task=task,
        metadata__mode="conversation",
        source=Example.Source.CREATED,
        model_wrong__isnull=False,
        is_retracted=False,
    )


def _context_text(cfg, context) -> str:
    message = context_message(cfg, context)
    return message["content"] if message else ""


def _items(judge: Judge) -> list[_Item]:
    """What ``judge`` has no readable verdict on yet: the task's human-judged conversations, then the
    answered replayed conversations of its rounds, each by id."""
    task = judge.task
    cfg = task.cfg
    answered = JudgeVerdict.objects.filter(judge=judge, status=JudgeVerdict.Status.OK)
    examples = (
        Example.objects.filter(human_conversations(task))
        .exclude(Exists(answered.filter(example=OuterRef("pk"))))
        .select_related("context")
        .order_by("pk")
    )
    items = []
    for example in examples:
        messages = [m for m in (example.inputs or {}).get("messages", []) if isinstance(m, dict)]
        messages = [m for m in messages if m.get("role") != "system"]
        last = messages[-1] if messages else None
        output = last.get("content") if last and last.get("role") == "assistant" else None
        items.append(
            _Item(
                example,
                None,
                _context_text(cfg, example.context),
                messages[:-1],
                output if isinstance(output, str) else None,
            )
        )
    replayed = (
        ReplayAnswer.objects.filter(
            replay__round__task=task,
            status=ReplayAnswer.Status.OK,
            example__metadata__mode="conversation",
        )
        .exclude(Exists(answered.filter(replay_answer=OuterRef("pk"))))
        .select_related("example__context")
        .order_by("pk")
    )
    for answer in replayed:
        messages = [m for m in (answer.messages or []) if isinstance(m, dict) and m.get("role") != "system"]
        items.append(
            _Item(None, answer, _context_text(cfg, answer.example.context), messages, answer.answer or None)
        )
    return items


def _generate(judge: Judge, prompts_: list[str], decoding: Decoding) -> list[Generation]:
    """The judge model's replies to ``prompts_``, in order (each one user message; the model's stored
    system prompt, if any, comes first): a local model answers them in one batch, a remote one one by
    one (``models_registry.generative.generate_batch``). A prompt that fails gets a reply with finish
    reason ``error`` and no text."""
    conversations = [[{"role": "user", "content": prompt}] for prompt in prompts_]
    return generate_batch(judge.model, conversations, decoding, batch_size=BATCH_SIZE)


def _safe_error(text: str) -> str:
    return without_server_paths(text, settings.DYNABENCH_MODEL_DIR)[:MAX_ERROR]


def _prompt(judge: Judge, item: _Item, rubric: Rubric) -> str:
    return prompts.render(
        judge.prompt_template,
        context=item.context,
        conversation=item.conversation,
        output=item.output or "",
        rubric=rubric,
    )


def _verdicts_of(judge: Judge, items: list[_Item], rubric: Rubric, decoding: Decoding) -> list[dict]:
    """The verdicts' fields for ``items``, in order. A remote judge is asked for the JSON of its answers
    (one batch) and each reply read; a local judge answers each rubric question by constrained choice
    (``_choice_verdict``): a small local model seldom writes the JSON asked for (SmolLM2-135M repeats the
    passage), and scoring the offered answers is two forward passes instead of a long generation on a
    machine the crowd shares."""
    missing = {"status": JudgeVerdict.Status.FAILED, "error": "The stored item has no answer to judge."}
    if judge.model.source != RegisteredModel.Source.CHAT_ENDPOINT:
        return [
            _choice_verdict(judge, _prompt(judge, item, rubric), rubric)
            if item.output is not None
            else dict(missing)
            for item in items
        ]
    asked = [item for item in items if item.output is not None]
    try:
        replies = iter(_generate(judge, [_prompt(judge, item, rubric) for item in asked], decoding))
    except InferenceError as exc:  # the model cannot answer at all (no longer generative, say)
        failure = {"status": JudgeVerdict.Status.FAILED, "error": _safe_error(str(exc))}
        return [dict(failure) for _ in items]
    return [
        _verdict_of(next(replies), rubric) if item.output is not None else dict(missing) for item in items
    ]


def _choice_verdict(judge: Judge, prompt: str, rubric: Rubric) -> dict:
    """A local judge's answers, question by question, by constrained choice: the judge's prompt, then the
    question, and the question's offered answers scored as the options of a multiple-choice item
    (``models_registry.generative.choose``: log-likelihood per UTF-8 byte, as lm-evaluation-harness's
    ``acc_norm``). Every answer is one the rubric offers, so the verdict is always readable.
    ``generation`` holds ``method`` (``choice``), the judge's name and each question's normalised scores
    (``choice_scores``); ``raw`` the answers as text. A model that cannot score gives a ``failed`` verdict.
    """
    asked = [
        (
            [
                {
                    "role": "user",
                    "content": f"{prompt}\n\nAnswer only this question, with one of: "
                    f"{', '.join(question.answers)}.\n{question.question}",
                }
            ],
            list(question.answers),
        )
        for question in rubric.questions
    ]
    try:
        # One call: the questions share the judge's prompt, which a local model then reads once.
        picks = choose_each(judge.model, asked)
    except InferenceError as exc:
        return {"status": JudgeVerdict.Status.FAILED, "error": _safe_error(str(exc))}
    answers: dict[str, str] = {}
    scores: dict[str, list] = {}
    for question, picked in zip(rubric.questions, picks, strict=True):
        answers[question.name] = question.answers[picked.picked]
        scores[question.name] = list(picked.normalised)
    answers = rubric.clean(answers)
    return {
        "status": JudgeVerdict.Status.OK,
        "rubric_answers": answers,
        "failed": rubric.failed(answers),
        "raw": json.dumps(answers, ensure_ascii=False),
        "generation": {"method": "choice", "model": judge.model.name, "choice_scores": scores},
    }


def _verdict_of(generation: Generation, rubric: Rubric) -> dict:
    """A verdict's fields from the judge's reply: read (``prompts.parse``), unreadable, or failed."""
    record = generation.as_dict()
    answers = prompts.parse(generation.text, rubric)
    if answers is not None:
        return {
            "status": JudgeVerdict.Status.OK,
            "rubric_answers": answers,
            "failed": rubric.failed(answers),
            "raw": generation.text,
            "generation": record,
        }
    if generation.finish_reason in ("error", "timeout", "cut_short"):  # not the judge's whole answer
        why = generation.error or f"the judge's answer ended with {generation.finish_reason}"
        return {
            "status": JudgeVerdict.Status.FAILED,
            "raw": generation.text,
            "error": _safe_error(why),
            "generation": record,
        }
    return {"status": JudgeVerdict.Status.UNREADABLE, "raw": generation.text, "generation": record}


def _store(judge: Judge, item: _Item, fields: dict) -> JudgeVerdict:
    """Create or replace ``judge``'s verdict on ``item`` (a retry replaces an unreadable or failed one)."""
    defaults = {"rubric_answers": {}, "failed": None, "raw": "", "error": "", "generation": {}, **fields}
    verdict, _ = JudgeVerdict.objects.update_or_create(
        judge=judge, example=item.example, replay_answer=item.replay_answer, defaults=defaults
    )
    return verdict


def _set(judge_id: int, **fields) -> None:
    Judge.objects.filter(pk=judge_id).update(**fields, updated_at=timezone.now())


def run_judge_job(judge_id: int) -> str:
    """Judge every output of the judge's task it has no readable verdict on yet: each human-judged
    conversation (``human_conversations``) and each answered replayed conversation of the task's
    rounds. Each is rendered with the judge's template (``prompts.render``), answered greedily
    (``judge_decoding``; ``BATCH_SIZE`` outputs per batch, the progress written after each) and read
    with ``prompts.parse``; the ``JudgeVerdict`` stores the answers and
    ``failed`` (``Rubric.failed``), the reply (``raw``) and its generation record, with status
    ``unreadable`` when the reply cannot be read and ``failed`` when the model failed (``error``).

    Resumable: outputs with an ``ok`` verdict are skipped; unreadable and failed ones are asked once
    more per run. Runs once when delivered twice (the ``UPDATE ... WHERE status = 'queued'`` claim).
    Writes no example, prediction or validation: a judge never settles anything.

    Returns:
        ``done``, ``failed`` (the run broke; ``progress`` says why), or the status found when the job
        was not claimed (``missing`` for no such judge).
    """
    # Two deliveries of this job race here; one UPDATE wins.
    claimed = Judge.objects.filter(pk=judge_id, status="queued").update(
        status="running", progress="Starting.", updated_at=timezone.now()
    )
    if not claimed:
        current = Judge.objects.filter(pk=judge_id).values_list("status", flat=True).first()
        logger.info("judge run %s not started: the judge is %s", judge_id, current or "missing")
        return current or "missing"
    judge = Judge.objects.select_related("task", "model").get(pk=judge_id)
    try:
        rubric = judge.task.cfg.rubric
        decoding = judge_decoding(rubric)
        items = _items(judge)
        counts = {status: 0 for status in JudgeVerdict.Status.values}
        for start in range(0, len(items), BATCH_SIZE):
            batch = items[start : start + BATCH_SIZE]
            for item, fields in zip(batch, _verdicts_of(judge, batch, rubric, decoding), strict=True):
                counts[_store(judge, item, fields).status] += 1
            done = start + len(batch)
            if done < len(items):
                _set(judge_id, progress=_progress(done, len(items), counts))
    except Exception as exc:  # noqa: BLE001 - the owner must see every failure on the judge
        logger.exception("judge run %s failed", judge_id)
        _set(
            judge_id,
            status="failed",
            progress=_safe_error(f"The run failed: {type(exc).__name__}: {exc}")[:200],
        )
        return "failed"
    _set(judge_id, status="done", progress=_progress(len(items), len(items), counts, done=True))
    return "done"


def _progress(n: int, total: int, counts: dict, *, done: bool = False) -> str:
    """``"12 of 40 outputs judged: 10 read, 1 unreadable, 1 failed"`` (``"Done: ..."`` at the end)."""
    if done and not total:
        return "Done: nothing left to judge."
    head = f"Done: {n} outputs judged" if done else f"{n} of {total} outputs judged"
    return (f"{head}: {counts['ok']} read, {counts['unreadable']} unreadable, {counts['failed']} failed.")[
        :200
    ]
