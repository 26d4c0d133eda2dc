"""Import SQuAD v1.1 (Rajpurkar et al. 2016) as round 1 of the ``qa`` task.

Every paragraph becomes a ``Context`` (``{"title": article title, "context": passage}``), every question
a validated, imported ``Example`` on it: ``inputs={"question": ...}``, target
``{"answer": first reference, "answer_start": its code-point offset, "answers": every reference as
{"text", "answer_start"}}`` (SQuAD scores a prediction against the best of its 1-6 references, so they
are all kept), ``external_id`` the SQuAD id, a tag ``article:<title>``.

The split is by ARTICLE, so no passage of a test article was seen in training (``article_split``;
``docs/datasets.md``, "Extractive QA").

Passages and questions are newline-normalised (CRLF and lone CR become LF) and each answer offset is
remapped onto the normalised passage (``core.spans.remap_span``); questions lose surrounding white space
(254 SQuAD questions carry some). Skipped, with the reason in the report: a question that is empty or
too long, a repeated id, a question none of whose answers is at its offset. A reference answer that is
not at its offset is dropped from ``answers`` (counted in the report) when another one is fine.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from annotation.importers.common import ImportReport, ProgressFactory, no_progress
from annotation.models import Example
from core.spans import SpanError, remap_span
from core.text_rules import normalise_newlines
from tasks.models import Task

from .round_examples import RoundRow, RoundSpec, drop_duplicate_ids, import_round_rows, split_bucket

DATASET_NAME = "SQuAD v1.1"
SQUAD_DIR = "squad"
SQUAD_FILE = "squad_v1.1_dev_shared.json.gz"
ROUND = RoundSpec(
    number=1,
    description=(
        "SQuAD v1.1 (Rajpurkar et al. 2016), the shared part of the official dev set: 43 Wikipedia "
        "articles; split by article (docs/datasets.md)."
    ),
    metadata={"source_dataset": DATASET_NAME, "licence": "CC BY-SA 4.0"},
)


def article_split(title: str) -> str:
    """The split of every question of an article: ``split_bucket(title)`` (first 8 bytes of
    ``sha256(title)`` mod 10) 0-6 ``train``, 7 ``dev``, 8-9 ``test``.

    Here: 27 articles (5,748 questions) train, 6 (1,117) dev, 10 (2,171) test.
    """
    bucket = split_bucket(title)
    if bucket < 7:
        return Example.Split.TRAIN
    return Example.Split.DEV if bucket == 7 else Example.Split.TEST


def read_squad(path: Path) -> dict:
    """The decoded SQuAD JSON of a ``.json.gz`` (or plain ``.json``) file.

    Raises:
        FileNotFoundError: if the file is missing.
        ValueError: if it is not SQuAD JSON (no ``data`` list).
    """
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        document = json.load(handle)
    if not isinstance(document, dict) or not isinstance(document.get("data"), list):
        raise ValueError(f"{path}: not SQuAD JSON (no 'data' list)")
    return document


DROPPED = "reference answers dropped (not at their offset)"


def _answers(raw_passage: str, qa: dict) -> tuple[str, list[dict], int]:
    """The normalised passage, the answers that are at their offsets (remapped onto it) and how many
    were not."""
    passage = normalise_newlines(raw_passage)
    kept = []
    dropped = 0
    for answer in qa.get("answers") or []:
        if not isinstance(answer, dict):
            dropped += 1
            continue
        text, start = answer.get("text"), answer.get("answer_start")
        if (
            not isinstance(text, str)
            or not text.strip()
            or not isinstance(start, int)
            or raw_passage[start : start + len(text)] != text
        ):
            dropped += 1
            continue
        try:
            _, new_start, new_end = remap_span(raw_passage, start, start + len(text))
        except SpanError:
            dropped += 1
            continue
        kept.append({"text": passage[new_start:new_end], "answer_start": new_start})
    return passage, kept, dropped


def squad_rows(document: dict, report: ImportReport, *, max_question_length: int) -> list[RoundRow]:
    """One ``RoundRow`` per usable question of a SQuAD document (see the module docstring).

    Counts every question read in ``report.read``; questions that cannot be used are left out with their
    reason in ``report.skipped``. A reference answer dropped from a question that has another usable one
    is counted in ``report.breakdown[DROPPED]``.
    """
    rows: list[RoundRow] = []
    for article in document["data"]:
        title = str(article.get("title", "")).strip()
        split = article_split(title)
        for p_index, paragraph in enumerate(article.get("paragraphs") or []):
            raw_passage = paragraph.get("context")
            for qa in paragraph.get("qas") or []:
                report.read += 1
                qid = str(qa.get("id", "")).strip()
                where = f"{title} paragraph {p_index} question {qid or '?'}"
                question = normalise_newlines(str(qa.get("question") or "")).strip()
                if not isinstance(raw_passage, str) or not raw_passage.strip():
                    report.skipped.append(f"{where}: empty passage")
                    continue
                if not qid:
                    report.skipped.append(f"{where}: no id")
                    continue
                if not question:
                    report.skipped.append(f"{where}: empty question")
                    continue
                if len(question) > max_question_length:
                    report.skipped.append(f"{where}: question longer than {max_question_length} characters")
                    continue
                passage, answers, dropped = _answers(raw_passage, qa)
                if not answers:
                    report.skipped.append(f"{where}: no answer at its offset")
                    continue
                if dropped:
                    report.breakdown[DROPPED] = report.breakdown.get(DROPPED, 0) + dropped
                rows.append(
                    RoundRow(
                        round_number=ROUND.number,
                        external_id=qid,
                        inputs={"question": question},
                        target={
                            "answer": answers[0]["text"],
                            "answer_start": answers[0]["answer_start"],
                            "answers": answers,
                        },
                        split=split,
                        context={"title": title, "context": passage},
                        tags=[f"article:{title}"],
                        metadata={"source_dataset": DATASET_NAME, "title": title, "paragraph": p_index},
                        where=where,
                    )
                )
    return rows


def import_squad(*, task: Task, data_dir: Path, progress: ProgressFactory = no_progress) -> ImportReport:
    """Import ``data_dir/squad_v1.1_dev_shared.json.gz`` (a ``squad`` folder) into round 1 of ``task``.

    Idempotent (contexts by their data, examples by SQuAD id): a second run creates nothing. One
    transaction.

    Returns:
        An ``ImportReport``: questions read, created, already present, skipped (with reasons), and a
        breakdown per round and split.

    Raises:
        FileNotFoundError: if the file is missing (checked before anything is written).
        ValueError: if it is not SQuAD JSON.
    """
    path = Path(data_dir) / SQUAD_FILE
    if not path.is_file():
        raise FileNotFoundError(f"SQuAD file not found: {path}")
    report = ImportReport(source=DATASET_NAME)
    limit = task.cfg.max_length_of(task.cfg.input_fields[0])
    rows = drop_duplicate_ids(squad_rows(read_squad(path), report, max_question_length=limit), report)
    import_round_rows(task=task, rows=rows, rounds=[ROUND], report=report, progress=progress)
    return report
