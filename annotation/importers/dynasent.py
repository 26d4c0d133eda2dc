"""Import DynaSent v1.1 (Potts et al. 2021) as rounds 1 and 2 of the sentiment task.

Files (in the ``dynasent`` data folder): round 1's Yelp dev and test sets and round 2's Dynabench dev
set (its test set is held out). Each row becomes a validated, imported example: ``inputs={"statement":
sentence}``, ``target`` its ``gold_label``, ``external_id`` its ``text_id``, the split by
``round_examples.split_for`` (round 1: dev file 90% train / 10% dev by hash, test file test; round 2:
dev file 60/10/30 train/dev/test). Round 2 rows keep their prompt sentence as their context
(``{"prompt": prompt_sentence}``), one context per distinct prompt.

Labels: positive, negative, neutral as spelled in the data. DynaSent also has ``mixed`` (and ``null``
where annotators did not agree); the ternary benchmark leaves those sentences out and so does this
importer: such a row is skipped, with its line and label in the report. (The dev/test files here have
none; ``sst-dev-validated`` has both, and is not imported.)

Metadata keeps the validators' vote counts per label (``label_counts``), never their worker ids
(``label_distribution``, ``sentence_author`` and ``hit_ids`` in the source are not stored). Re-importing
rewrites the metadata of rows imported earlier, so a database that kept worker ids loses them.
"""

from __future__ import annotations

from pathlib import Path

from annotation.importers.common import ImportReport, ProgressFactory, no_progress
from core.text_rules import normalise_newlines
from tasks.builtin_configs import SENTIMENT_LABELS
from tasks.models import Task

from .round_examples import (
    DEV_ONLY,
    DEV_WITH_TEST,
    TEST,
    RoundRow,
    RoundSpec,
    import_round_rows,
    read_round_files,
    split_for,
)

DATASET_NAME = "DynaSent"
SOURCE = "github.com/cgpotts/dynasent@707b6208978bfe7ff251a0c3263c9f0552c27b48 (dynasent-v1.1)"
LICENCE = "CC BY 4.0"

#: (file name, platform round, file role for the split rule), in import order.
FILES: tuple[tuple[str, int, str], ...] = (
    ("dynasent-v1.1-round01-yelp-dev.jsonl.gz", 1, DEV_WITH_TEST),
    ("dynasent-v1.1-round01-yelp-test.jsonl.gz", 1, TEST),
    ("dynasent-v1.1-round02-dynabench-dev.jsonl.gz", 2, DEV_ONLY),
)
ROUNDS = (
    RoundSpec(
        1,
        "DynaSent round 1 (Potts et al. 2021): naturally occurring Yelp sentences that fooled a "
        "RoBERTa ensemble, validated by 5 annotators.",
        {"source_dataset": DATASET_NAME, "source_round": 1, "licence": LICENCE},
    ),
    RoundSpec(
        2,
        "DynaSent round 2 (Potts et al. 2021): sentences written on Dynabench from a review's prompt "
        "sentence against a RoBERTa model, validated by 5 annotators.",
        {"source_dataset": DATASET_NAME, "source_round": 2, "licence": LICENCE},
    ),
)
_MODEL_FIELDS = {1: "model_0", 2: "model_1"}


def label_counts(distribution) -> dict[str, int] | None:
    """How many of the 5 validators chose each label, from DynaSent's ``label_distribution``.

    The source maps each label to the list of validators' worker ids (``{"positive": ["w224", "w310"],
    "neutral": ["w152"], "mixed": []}``); only the counts are kept (``{"positive": 2, "neutral": 1,
    "mixed": 0}``, labels in source order), so no worker id reaches the database, the API or an
    export. None when the record has no such mapping; a label whose value is not a list is left out.
    """
    if not isinstance(distribution, dict):
        return None
    return {str(label): len(ids) for label, ids in distribution.items() if isinstance(ids, list)}


def _row(record: dict, round_number: int, role: str, where: str, max_length: int) -> RoundRow | str:
    """The example of one record, or the reason it is skipped."""
    sentence = record.get("sentence")
    label = record.get("gold_label")
    text_id = record.get("text_id")
    if not isinstance(text_id, str) or not text_id.strip():
        return "no text_id"
    if not isinstance(sentence, str) or not sentence.strip():
        return "empty sentence"
    sentence = normalise_newlines(sentence)
    if len(sentence) > max_length:
        return f"sentence longer than {max_length} characters"
    if label not in SENTIMENT_LABELS:
        return f"label {label!r} is not one of {SENTIMENT_LABELS} (mixed and unagreed sentences are left out)"
    context = {}
    prompt = record.get("prompt_data") if round_number == 2 else None
    if (
        isinstance(prompt, dict)
        and isinstance(prompt.get("prompt_sentence"), str)
        and prompt["prompt_sentence"].strip()
    ):
        context = {"prompt": normalise_newlines(prompt["prompt_sentence"])}
    model = _MODEL_FIELDS[round_number]
    metadata = {
        "dataset": DATASET_NAME,
        "source_file": where.split(" line ")[0],
        "source_round": round_number,
        "label_counts": label_counts(record.get("label_distribution")),
        "source_model_label": record.get(f"{model}_label"),
        "review_rating": record.get("review_rating", (prompt or {}).get("review_rating")),
    }
    return RoundRow(
        round_number=round_number,
        external_id=text_id.strip(),
        inputs={"statement": sentence},
        target=label,
        split=split_for(text_id.strip(), role),
        context=context,
        metadata=metadata,
        where=where,
    )


def read_dynasent(data_dir: Path, report: ImportReport, max_length: int) -> list[RoundRow]:
    """Every valid row of the DynaSent files in ``data_dir``; skipped rows are added to ``report``.

    Raises:
        FileNotFoundError: naming the first missing file.
    """
    return read_round_files(
        data_dir,
        FILES,
        report,
        lambda record, number, role, where: _row(record, number, role, where, max_length),
        dataset_name="DynaSent",
    )


def import_dynasent(*, task: Task, data_dir: Path, progress: ProgressFactory = no_progress) -> ImportReport:
    """Import DynaSent rounds 1-2 into ``task`` (the sentiment task); see the module docstring.

    Returns:
        An ``ImportReport``; ``breakdown`` counts rows per round and split.

    Raises:
        FileNotFoundError: a file is missing (checked before anything is written).
    """
    report = ImportReport(source=DATASET_NAME)
    max_length = task.cfg.max_length_of(task.cfg.input_fields[0])
    rows = read_dynasent(Path(data_dir), report, max_length)
    import_round_rows(task=task, rows=rows, rounds=list(ROUNDS), report=report, progress=progress)
    return report
