"""Export a task's or a round's examples as JSONL or CSV, streamed with constant memory.

The format is documented in ``docs/export-format.md`` (``FORMAT_VERSION``). Rows are read with
``QuerySet.iterator(chunk_size=...)`` and their predictions and validations prefetched per chunk, so
memory does not grow with the number of examples. Annotator and validator ids are replaced by
pseudonyms: HMAC-SHA256 keyed with ``settings.DYNABENCH_EXPORT_KEY`` over (round id, user id), the same
in every export of that round and different across rounds.

Validations are the validation app's table, above this one: they are read through the reverse relation
``Example.validations`` (``annotation.selectors.validations_in_order``), never by an import (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import csv
import hashlib
import hmac
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import IO, Any

from django.conf import settings
from django.db.models import Prefetch, QuerySet

from annotation.chat_format import context_message
from annotation.models import ArmAssignment, Example, Prediction, Suggestion
from annotation.selectors import validations_in_order
from models_registry.models import RegisteredModel
from tasks.kinds import conversational
from tasks.models import Round, Task
from tasks.rubric_agreement import rubric_agreement

FORMAT_VERSION = "1.5"
FORMATS = ("jsonl", "csv")
CONTENT_TYPES = {"jsonl": "application/x-ndjson; charset=utf-8", "csv": "text/csv; charset=utf-8"}
DEFAULT_CHUNK_SIZE = 500  # examples per query; the working set of one chunk is ~10 MiB
PSEUDONYM_PREFIX = "anon-"
PSEUDONYM_HEX_LENGTH = 16


#: The keys of a record, in order (docs/export-format.md describes each).
RECORD_KEYS = (
    "format_version",
    "task",
    "licence",
    "example_id",
    "round",
    "external_id",
    "source",
    "split",
    "annotator",
    "context_id",
    "context_tag",
    "context",
    "inputs",
    "target",
    "predicted_labels",
    "predictions",
    "model_wrong",
    "model_wrong_decided",
    "prediction_status",
    "status",
    "is_retracted",
    "is_flagged_by_annotator",
    "flag_reason",
    "explanation",
    "time_taken_ms",
    "n_validations",
    "validations",
    "tags",
    "metadata",
    "created_at",
    "settled_at",
    "retracted_at",
    "flagged_at",
)


#: The keys a task in uncertainty mode adds after ``RECORD_KEYS`` (docs/export-format.md, "Uncertainty
#: mode"): the mode and its goal in words (the same in every row), and the server's unsure verdict.
UNCERTAINTY_KEYS = ("mode", "goal", "model_unsure", "model_unsure_decided")

#: The keys a task with an annotation-assistant study adds (docs/export-format.md, "Annotation
#: assistants"): the author's arm in the round ("" for none), and the suggestion the example took (its
#: id, text and the edit distance to the text sent; 0, "" and -1 when it took none).
ASSISTANT_KEYS = ("arm", "suggestion_id", "suggestion_text", "kept_distance")

#: The keys a red-teaming task's records add after ``RECORD_KEYS`` (docs/export-format.md, "Red-teaming
#: tasks"). One type per key in every row, conversations and multiple-choice items alike, so that
#: ``datasets.load_dataset("json", ...)`` reads a file that mixes them.
RED_TEAM_KEYS = (
    "mode",
    "messages",
    "rubric",
    "categories",
    "turns",
    "input_tokens",
    "output_tokens",
    "cost",
    "generations",
    "question",
    "options",
    "answer",
    "picked",
    "side_by_side",
    "agreement_warning",
)


#: The keys of one answer's record in ``generations`` (``Generation.as_dict``, docs/generative.md, "Every
#: answer records what produced it"); any other key a stored record holds is dropped.
GENERATION_KEYS = (
    "text",
    "finish_reason",
    "model",
    "decoding",
    "seed",
    "input_tokens",
    "output_tokens",
    "first_token_ms",
    "latency_ms",
    "cost",
    "error",
    "extra",
    "provenance",
)
#: The decoding settings of a record (``runtime.generative.Decoding``), in this order.
DECODING_KEYS = ("temperature", "top_p", "max_new_tokens", "stop", "seed")

#: A dict key matching this (any case) names a secret, and is dropped from a red-teaming row's
#: ``metadata``, ``generations`` and prediction outputs wherever it is nested: an API key, the name of
#: the variable or file holding one (``api_key_env``, ``api_key_file``), an endpoint secret, a password or
#: an ``Authorization`` header. Keys are never stored there (docs/generative.md, "The API key is never
#: stored"); this is the export's own guard against one written by mistake.
SECRET_KEY_PATTERN = re.compile(r"api[_-]?key|secret|passw|authori[sz]ation|bearer|credential", re.IGNORECASE)


def without_secrets(value: Any) -> Any:
    """``value`` (JSON-like: dicts, lists, scalars) with every dict entry whose key matches
    ``SECRET_KEY_PATTERN`` removed, at any depth; other values are returned as they are (a new dict or
    list where something below was removed). E.g. ``{"extra": {"api_key_env": "K", "queued_ms": 3}}`` →
    ``{"extra": {"queued_ms": 3}}``."""
    if isinstance(value, dict):
        return {
            k: without_secrets(v)
            for k, v in value.items()
            if not (isinstance(k, str) and SECRET_KEY_PATTERN.search(k))
        }
    if isinstance(value, list):
        return [without_secrets(v) for v in value]
    return value


def generation_record(stored: dict) -> dict[str, Any]:
    """One answer's record as exported: the ``GENERATION_KEYS`` of the stored ``Generation.as_dict`` (a
    missing one None, ``extra`` ``{}``; the export's JSON text sorts them), ``decoding`` with exactly the ``DECODING_KEYS``
    (``stop`` a list), and nothing else: a key the record gains later, or a secret (``without_secrets``),
    does not travel. Values are as stored: tokens int or None, times in ms, ``cost`` in the currency of
    the model's prices per million tokens or None."""
    decoding = stored.get("decoding") if isinstance(stored.get("decoding"), dict) else {}
    record = {key: stored.get(key) for key in GENERATION_KEYS}
    record["decoding"] = {key: decoding.get(key) for key in DECODING_KEYS}
    stop = record["decoding"]["stop"]
    record["decoding"]["stop"] = list(stop) if isinstance(stop, (list, tuple)) else []
    record["extra"] = without_secrets(stored["extra"]) if isinstance(stored.get("extra"), dict) else {}
    provenance = stored.get("provenance")
    record["provenance"] = without_secrets(provenance) if isinstance(provenance, dict) else None
    return record


def rubric_list(answers: dict, questions: Sequence[str]) -> list[dict[str, str]]:
    """Rubric answers ``{question name: answer}`` as exported: ``[{"question", "answer"}]``, the rubric's
    ``questions`` first in its order, then any other name the answers hold."""
    order = [*[q for q in questions if q in answers], *[k for k in answers if k not in questions]]
    return [{"question": _text(k), "answer": _text(answers[k])} for k in order]


def side_by_side_answer(
    stored: dict, system: list[dict], first_user: dict | None, questions: Sequence[str]
) -> dict:
    """One side-by-side answer to a conversation's first message as exported (docs/export-format.md,
    "Several models in one conversation"): ``answer_of`` ("A"), ``model``, ``messages`` in the chat format
    (the passage, the first message, this answer), ``status``, ``score`` (1-100; -1 for an answer that
    failed and took no rating), ``rubric`` ``[{"question", "answer"}]`` in the rubric's order,
    ``failed`` (the rubric judged a failure; False when not rated), ``categories``, ``chosen`` and
    ``generation`` (the JSON text of ``generation_record``)."""
    rubric = stored.get("rubric") if isinstance(stored.get("rubric"), dict) else {}
    score = stored.get("score")
    answer = {"role": "assistant", "content": _text(stored.get("answer"))}
    return {
        "answer_of": _text(stored.get("slot")),
        "model": _text(stored.get("model")),
        "messages": [*system, *([first_user] if first_user else []), answer],
        "status": _text(stored.get("status")),
        "score": score if isinstance(score, int) and not isinstance(score, bool) else -1,
        "rubric": rubric_list(rubric, questions),
        "failed": stored.get("failed") is True,
        "categories": [_text(t) for t in stored.get("categories") or [] if t is not None],
        "chosen": stored.get("chosen") is True,
        "generation": _json_text(
            generation_record(stored["generation"]) if isinstance(stored.get("generation"), dict) else {}
        ),
    }


def red_team_fields(
    example: Example, context_message: dict | None, questions: Sequence[str] = ()
) -> dict[str, Any]:
    """The ``RED_TEAM_KEYS`` of one red-teaming example.

    A conversation: ``messages`` in the chat format (``{"role", "content"}``; the passage first, as the
    system message the target read, ``context_message``), ``rubric`` the author's answers as
    ``[{"question", "answer"}]`` in the rubric's order (``questions``), ``categories`` its failure categories, ``turns``, the summed
    ``input_tokens`` / ``output_tokens`` (-1 when a turn's count is unknown) and ``cost`` (-1.0 when
    unknown), and ``generations``, the JSON text of each answer's record (``generation_record``: model,
    decoding settings, tokens, cost, finish reason, times; no secret). A multiple-choice item: ``question``, ``options``, ``answer``
    (the correct option's index) and ``picked`` (the target's; -1 unknown). The other mode's keys are
    empty (``""``, ``[]``, -1), never null.
    """
    metadata = example.metadata or {}
    mode = metadata.get("mode", "")
    inputs = example.inputs if isinstance(example.inputs, dict) else {}
    target = example.target if isinstance(example.target, dict) else {}
    fields: dict[str, Any] = {
        "mode": mode,
        "messages": [],
        "rubric": [],
        "categories": [],
        "turns": 0,
        "input_tokens": -1,
        "output_tokens": -1,
        "cost": -1.0,
        "generations": "[]",
        "question": "",
        "options": [],
        "answer": -1,
        "picked": -1,
        "side_by_side": [],
    }
    if mode == "conversation":
        messages = [
            {"role": _text(m.get("role")), "content": _text(m.get("content"))}
            for m in inputs.get("messages", [])
            if isinstance(m, dict)
        ]
        if context_message and not (messages and messages[0]["role"] == "system"):
            messages.insert(0, context_message)
        generations = [generation_record(g) for g in metadata.get("generations", []) if isinstance(g, dict)]

        def total(key: str) -> int:
            values = [g.get(key) for g in generations]
            return sum(values) if values and all(isinstance(v, int) for v in values) else -1

        cost = metadata.get("cost")
        fields.update(
            messages=messages,
            rubric=rubric_list(target, questions),
            categories=[_text(t) for t in (example.tags if isinstance(example.tags, list) else [])],
            turns=int(metadata.get("turns") or 0),
            input_tokens=total("input_tokens"),
            output_tokens=total("output_tokens"),
            cost=float(cost) if isinstance(cost, (int, float)) else -1.0,
            generations=_json_text(generations),
        )
        system = [m for m in messages if m["role"] == "system"]
        first_user = next((m for m in messages if m["role"] == "user"), None)
        fields["side_by_side"] = [
            side_by_side_answer(answer, system, first_user, questions)
            for answer in metadata.get("side_by_side", [])
            if isinstance(answer, dict)
        ]
    elif mode == "multiple_choice":
        picked = metadata.get("picked")
        fields.update(
            question=_text(inputs.get("question")),
            options=[_text(o) for o in inputs.get("options", [])],
            answer=target.get("answer", -1) if isinstance(target.get("answer"), int) else -1,
            picked=picked if isinstance(picked, int) else -1,
        )
    return fields


class ExportError(Exception):
    """An export that cannot be made as asked (unknown format, round of another task); says why."""


def pseudonym(round_id: int, user_id: int | None, *, key: str | bytes | None = None) -> str | None:
    """The pseudonymous id of a user within one round: ``anon-`` + 16 hex digits of HMAC-SHA256.

    The message is ``"<round id>:<user id>"``, the key ``settings.DYNABENCH_EXPORT_KEY`` unless given.
    Stable across exports with the same key; unrelated between rounds. ``None`` for no user (records
    write ``""`` then).
    """
    if user_id is None:
        return None
    key = settings.DYNABENCH_EXPORT_KEY if key is None else key
    key_bytes = key.encode("utf-8") if isinstance(key, str) else key
    digest = hmac.new(key_bytes, f"{round_id}:{user_id}".encode(), hashlib.sha256).hexdigest()
    return PSEUDONYM_PREFIX + digest[:PSEUDONYM_HEX_LENGTH]


def examples_for_export(task: Task, rounds: Sequence[Round] | None = None) -> QuerySet[Example]:
    """The examples to export: all of ``task`` (every round), or of ``rounds``; ordered by round, id.

    Retracted and flagged examples are included (with their flags); filter on them downstream. Rating
    examples (a replayed model's answers that people judge, docs/benchmarking.md) are not collected data
    and never exported: the replay's figures are the generative leaderboard's.

    Raises:
        ExportError: a round of another task.
    """
    qs = Example.objects.filter(round__task=task).exclude(source=Example.Source.RATING)
    if rounds is not None:
        for round_ in rounds:
            if round_.task_id != task.pk:
                raise ExportError(f"{round_} is not a round of {task.slug}")
        qs = qs.filter(round__in=[r.pk for r in rounds])
    return qs.order_by("round__number", "id")


def _iterate(qs: QuerySet[Example], chunk_size: int) -> Iterator[Example]:
    predictions = Prediction.objects.order_by("id").only(
        "id", "example_id", "model_id", "status", "label", "output", "model_wrong", "error"
    )
    validations = validations_in_order()
    return (
        qs.select_related("round", "context")
        .prefetch_related(
            Prefetch("predictions", queryset=predictions), Prefetch("validations", queryset=validations)
        )
        .iterator(chunk_size=chunk_size)
    )


def _json_text(value: Any) -> str:
    """Compact JSON with sorted keys and real characters (no \\u escapes for emoji or RTL text)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _time(value) -> str:
    """A time as ISO 8601 with its time zone, ``""`` for none (a change that has not happened)."""
    return "" if value is None else value.isoformat()


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else _json_text(value)


class _Exporter:
    """Turns examples of one task into records of ``FORMAT_VERSION`` (dicts with a fixed set of keys and types)."""

    def __init__(self, task: Task, key: str | bytes | None = None):
        self.task = task
        cfg = task.cfg
        self.context_fields = [f["name"] for f in cfg.context_fields]
        self.input_fields = [f["name"] for f in cfg.input_fields]
        self.licence = cfg.licence
        self.key = settings.DYNABENCH_EXPORT_KEY if key is None else key
        # The task's models are few; one query instead of a join per prediction.
        self.model_names = dict(RegisteredModel.objects.filter(task=task).values_list("id", "name"))
        self.red_team = conversational(cfg)
        self.keys = RECORD_KEYS + RED_TEAM_KEYS if self.red_team else RECORD_KEYS
        self.goal = cfg.uncertainty
        if self.goal is not None:
            self.keys = self.keys + UNCERTAINTY_KEYS
        self.study = bool(cfg.assistant_arms)
        if self.study:
            self.keys = self.keys + ASSISTANT_KEYS
            # The task's arms and taken suggestions are few beside its examples: read once.
            self.arms = {
                (r, w): arm
                for r, w, arm in ArmAssignment.objects.filter(round__task=task).values_list(
                    "round_id", "worker_id", "arm"
                )
            }
            self.suggestions = {
                s["example_id"]: s
                for s in Suggestion.objects.filter(round__task=task, example__isnull=False).values(
                    "example_id", "pk", "text", "kept_distance"
                )
            }
        self.cfg = cfg
        self._agreement: dict[int, object] = {}  # round id -> RubricAgreement, measured once per export

    def agreement_warning(self, example: Example) -> str:
        """Why validators' agreement makes this row's rates unreliable (``tasks.rubric_agreement``): the
        round's reason, then each of the row's categories' reasons, joined by "; "; "" when none (or for a
        row that is not a conversation). The round's agreement is measured once per export."""
        if (example.metadata or {}).get("mode") != "conversation":
            return ""
        round_ = example.round
        if round_.pk not in self._agreement:
            self._agreement.update(rubric_agreement(self.task, [round_]))
        agreement = self._agreement.get(round_.pk)
        if agreement is None:
            return ""
        tags = example.tags if isinstance(example.tags, list) else []
        reasons = [agreement.unreliable, *(agreement.unreliable_categories.get(t, "") for t in tags)]
        return "; ".join(r for r in dict.fromkeys(reasons) if r)

    def record(self, example: Example) -> dict[str, Any]:
        """The record of one example (docs/export-format.md). Every key has one type in every row (no nulls except
        ``context`` for a task without context fields, where it is null in every row): nested lists are
        JSON strings, so ``datasets`` never meets a column that is null in its first block."""
        round_ = example.round
        context = example.context
        inputs = example.inputs if isinstance(example.inputs, dict) else {}
        predictions = [
            {
                "model": self.model_names.get(p.model_id, ""),
                "model_id": p.model_id,
                "status": p.status,
                "label": p.label,
                "output": without_secrets(p.output or {}) if self.red_team else p.output or {},
                "model_wrong": p.model_wrong,
                "error": p.error,
            }
            for p in example.predictions.all()
        ]
        validations = [
            {
                "validator": pseudonym(round_.pk, v.validator_id, key=self.key),
                "verdict": v.verdict,
                "corrected_label": v.corrected_label,
                "reason": v.reason,
                "is_owner_verdict": v.is_owner_verdict,
                "created_at": v.created_at.isoformat(),
                **({"rubric_answers": v.rubric_answers or {}} if self.red_team else {}),
                # Uncertainty mode: the validator's own label or span, given without seeing the author's.
                **({"given_target": v.given_target} if self.goal is not None else {}),
            }
            for v in example.validations.all()
        ]
        tags = [_text(t) for t in (example.tags if isinstance(example.tags, list) else [])]
        record = {
            "format_version": FORMAT_VERSION,
            "task": self.task.slug,
            # The data's licence travels with every row (ANLI is CC BY-NC 4.0: non-commercial only).
            "licence": self.licence,
            "example_id": example.pk,
            "round": round_.number,
            "external_id": example.external_id,
            "source": example.source,
            "split": example.split,
            "annotator": pseudonym(round_.pk, example.annotator_id, key=self.key) or "",
            "context_id": context.pk if context else 0,
            "context_tag": context.tag if context else "",
            "context": (
                {f: _text((context.data or {}).get(f)) if context else "" for f in self.context_fields}
                if self.context_fields
                else None
            ),
            "inputs": {f: _text(inputs.get(f)) for f in self.input_fields},
            "target": example.target,
            "predicted_labels": "|".join(p["label"] for p in predictions),
            "predictions": _json_text(predictions),
            "model_wrong": bool(example.model_wrong),
            "model_wrong_decided": example.model_wrong is not None,
            "prediction_status": example.prediction_status,
            "status": example.status,
            "is_retracted": example.is_retracted,
            "is_flagged_by_annotator": example.is_flagged_by_annotator,
            "flag_reason": example.flag_reason,
            "explanation": example.explanation,
            "time_taken_ms": -1 if example.time_taken_ms is None else example.time_taken_ms,
            "n_validations": len(validations),
            "validations": _json_text(validations),
            "tags": _json_text(tags),
            # A red-teaming row's metadata holds the answers' records: no key naming a secret travels.
            "metadata": _json_text(
                without_secrets(example.metadata or {}) if self.red_team else example.metadata or {}
            ),
            "created_at": example.created_at.isoformat(),
            "settled_at": _time(example.settled_at),
            "retracted_at": _time(example.retracted_at),
            "flagged_at": _time(example.flagged_at),
        }
        if self.red_team:
            # A conversation's target is its rubric answers, an item's the answer's index: one JSON text.
            record["target"] = _json_text(example.target)
            questions = [q["name"] for q in self.cfg.red_team.get("rubric", [])]
            record.update(red_team_fields(example, context_message(self.cfg, context), questions))
            record["agreement_warning"] = self.agreement_warning(example)
        if self.study:
            taken = self.suggestions.get(example.pk)
            record.update(
                arm=self.arms.get((round_.pk, example.annotator_id), ""),
                suggestion_id=taken["pk"] if taken else 0,
                suggestion_text=taken["text"] if taken else "",
                kept_distance=taken["kept_distance"] if taken and taken["kept_distance"] is not None else -1,
            )
        if self.goal is not None:
            record.update(
                mode="uncertainty",
                goal=self.goal.rule,
                model_unsure=bool(example.model_unsure),
                model_unsure_decided=example.model_unsure is not None,
            )
        return record

    def csv_header(self) -> list[str]:
        """The CSV columns: the JSONL keys, with ``context`` and ``inputs`` flattened per field."""
        header = []
        for key in self.keys:
            if key == "context":
                header += [f"context.{f}" for f in self.context_fields]
            elif key == "inputs":
                header += [f"input.{f}" for f in self.input_fields]
            else:
                header.append(key)
        return header

    def csv_row(self, record: dict[str, Any]) -> list[str]:
        """One record as CSV cells: booleans ``true``/``false``, a non-string target as JSON, and every
        text defused for spreadsheets (``csv_cell``)."""
        cells = []
        for key in self.keys:
            value = record[key]
            if key == "context":
                cells += [csv_cell((value or {}).get(f, "")) for f in self.context_fields]
            elif key == "inputs":
                cells += [csv_cell(value[f]) for f in self.input_fields]
            elif isinstance(value, bool):
                cells.append("true" if value else "false")
            elif isinstance(value, (int, float)):
                cells.append(str(value))
            elif isinstance(value, list):
                cells.append(csv_cell(_json_text(value)))
            else:
                cells.append(csv_cell(_text(value)))
        return cells


#: A cell starting with one of these is read as a formula by spreadsheet programs (OWASP, "CSV
#: Injection"); the apostrophe itself, so that removing one leading apostrophe is always right.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "'")


def csv_cell(text: str) -> str:
    """``text`` as a CSV cell: with a leading apostrophe when it starts with ``FORMULA_STARTS``, so a
    spreadsheet shows ``=HYPERLINK(...)`` as text instead of running it. A reader gets the text back by
    removing one leading apostrophe from any cell that has one (docs/export-format.md, "CSV")."""
    return "'" + text if text.startswith(FORMULA_STARTS) else text


class _Line:
    """A file-like object whose ``write`` returns what it is given (for ``csv.writer`` in a generator)."""

    def write(self, value: str) -> str:
        return value


def iter_records(
    task: Task,
    rounds: Sequence[Round] | None = None,
    *,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    key: str | bytes | None = None,
) -> Iterator[dict[str, Any]]:
    """Yield one record (a dict, see docs/export-format.md) per example, in round and id order."""
    exporter = _Exporter(task, key)
    for example in _iterate(examples_for_export(task, rounds), chunk_size):
        yield exporter.record(example)


def iter_export(
    task: Task,
    rounds: Sequence[Round] | None = None,
    *,
    fmt: str = "jsonl",
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    key: str | bytes | None = None,
) -> Iterator[str]:
    """Yield the export as text pieces: one JSON object and ``\\n`` per example, or CSV lines (header first).

    CSV lines end with ``\\r\\n`` (RFC 4180); cells holding newlines, quotes or commas are quoted, so
    ``csv.reader`` on a file opened with ``newline=""`` gives back the exact text.

    Raises:
        ExportError: an unknown format or a round of another task (raised before anything is yielded).
    """
    if fmt not in FORMATS:
        raise ExportError(f"unknown export format {fmt!r}; choose one of {', '.join(FORMATS)}")
    queryset = examples_for_export(task, rounds)  # checks the rounds now, not at the first next()
    return _generate(task, queryset, fmt, chunk_size, key)


def _generate(task: Task, queryset, fmt: str, chunk_size: int, key) -> Iterator[str]:
    exporter = _Exporter(task, key)
    if fmt == "jsonl":
        for example in _iterate(queryset, chunk_size):
            yield _json_line(exporter.record(example))
        return
    writer = csv.writer(_Line())
    yield writer.writerow(exporter.csv_header())
    for example in _iterate(queryset, chunk_size):
        yield writer.writerow(exporter.csv_row(exporter.record(example)))


def _json_line(record: dict[str, Any]) -> str:
    # Keys in the documented order (not sorted); ensure_ascii=False keeps emoji and RTL text readable.
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"


def write_export(
    out: IO[str],
    task: Task,
    rounds: Sequence[Round] | None = None,
    *,
    fmt: str = "jsonl",
    chunk_size: int = DEFAULT_CHUNK_SIZE,
) -> int:
    """Write the export to the text stream ``out`` (open it with ``newline=""`` for CSV).

    Returns:
        The number of examples written.

    Raises:
        ExportError: as ``iter_export``.
    """
    count = -1 if fmt == "csv" else 0  # the CSV header is not an example
    for piece in iter_export(task, rounds, fmt=fmt, chunk_size=chunk_size):
        out.write(piece)
        count += 1
    return max(count, 0)


def export_filename(task: Task, rounds: Iterable[Round] | None, fmt: str) -> str:
    """E.g. ``hate-speech-round-4.jsonl``, ``hate-speech-rounds-1-2.csv``, ``hate-speech.jsonl``."""
    numbers = sorted(r.number for r in rounds) if rounds is not None else []
    if not numbers:
        return f"{task.slug}.{fmt}"
    label = "round" if len(numbers) == 1 else "rounds"
    return f"{task.slug}-{label}-{'-'.join(map(str, numbers))}.{fmt}"
