"""Import Adversarial NLI v0.1 (Nie et al. 2020) as rounds 1-3 of the NLI task.

Files (in the ``anli`` data folder): rounds 1 and 2 dev and test, round 3 dev (its test set is held
out). Each row becomes a validated, imported example: context ``{"premise": context}`` (one context
per distinct premise of a round; many hypotheses share a premise), ``inputs={"hypothesis": ...}``,
``target`` the label spelled out (``e``/``n``/``c`` -> entailment / neutral / contradiction),
``external_id`` the ``uid``, ``genre:<genre>`` as a tag, and the split by
``round_examples.split_for`` (rounds 1-2: dev file 90% train / 10% dev by hash, test file test;
round 3: dev file 60/10/30 train/dev/test).

Licence: CC BY-NC 4.0, non-commercial only; the rounds carry it in their metadata and the task config
in ``licence`` (shown on the task page, written into exports). ANLI's rule 2 asks not to train on
dev data; no train files could be had here, so the platform does train on part of the dev files
(``docs/datasets.md`` says so). Hypotheses keep their surrounding white space as in the source (the
annotation CSVs strip it, which is why nothing here joins on text).

Line breaks: the source marks them with an HTML tag in the text (``<br>`` 454 times and ``<BR>``
twice, in the premises of 346 rows, 317 distinct premises, 342 of the rows in R3: story titles, lines
of fiction and dialogue, Wikipedia paragraphs; none in hypotheses or reasons), which the pages would
show literally. ``<br>``, ``<br/>`` and ``<br />`` in any case become a newline
(``br_to_newline``) in premises, hypotheses and reasons; no other tag is touched (``<ref>``,
``<nowiki>`` are wiki markup that is part of the premise as written).
"""

from __future__ import annotations

import re
from pathlib import Path

from annotation.importers.common import ImportReport, ProgressFactory, no_progress
from core.text_rules import normalise_newlines
from tasks.models import Task
from tasks.services import DEFAULT_MAX_CONTEXT_LENGTH

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

DATASET_NAME = "ANLI"
SOURCE = "github.com/facebookresearch/dynabench@e146448c38ad42c81111ad2fb75dccd4301ec686 (anli_v0.1)"
LICENCE = "CC BY-NC 4.0 (non-commercial)"
LABELS = {"e": "entailment", "n": "neutral", "c": "contradiction"}

#: (file name, platform round, file role for the split rule), in import order.
FILES: tuple[tuple[str, int, str], ...] = (
    ("anli_v0.1_R1_dev.jsonl.gz", 1, DEV_WITH_TEST),
    ("anli_v0.1_R1_test.jsonl.gz", 1, TEST),
    ("anli_v0.1_R2_dev.jsonl.gz", 2, DEV_WITH_TEST),
    ("anli_v0.1_R2_test.jsonl.gz", 2, TEST),
    ("anli_v0.1_R3_dev.jsonl.gz", 3, DEV_ONLY),
)
ROUNDS = tuple(
    RoundSpec(
        n,
        f"ANLI round {n} (Nie et al. 2020), {what}. Licence CC BY-NC 4.0: non-commercial use only.",
        {"source_dataset": DATASET_NAME, "source_round": n, "licence": LICENCE},
    )
    for n, what in (
        (1, "Wikipedia premises against BERT-Large"),
        (2, "Wikipedia premises against a RoBERTa ensemble"),
        (3, "premises of several genres against a RoBERTa ensemble"),
    )
)


_BR = re.compile(r"<br\s*/?>", re.IGNORECASE)


def br_to_newline(text: str) -> str:
    """``text`` with each ``<br>``, ``<br/>``, ``<br />`` (any case) replaced by one newline ("\\n").

    Nothing else changes: ``"A.<br>B.<BR/>"`` -> ``"A.\\nB.\\n"``; ``"<b>x</b>"`` is left as it is.
    """
    return _BR.sub("\n", text)


def _row(record: dict, round_number: int, role: str, where: str, limits: tuple[int, int]) -> RoundRow | str:
    """The example of one record, or the reason it is skipped."""
    uid, premise, hypothesis = record.get("uid"), record.get("context"), record.get("hypothesis")
    label = LABELS.get(str(record.get("label", "")).strip().lower())
    max_premise, max_hypothesis = limits
    if not isinstance(uid, str) or not uid.strip():
        return "no uid"
    if not isinstance(premise, str) or not premise.strip():
        return "empty premise (context)"
    if not isinstance(hypothesis, str) or not hypothesis.strip():
        return "empty hypothesis"
    premise = br_to_newline(normalise_newlines(premise))
    hypothesis = br_to_newline(normalise_newlines(hypothesis))
    if len(premise) > max_premise:
        return f"premise longer than {max_premise} characters"
    if len(hypothesis) > max_hypothesis:
        return f"hypothesis longer than {max_hypothesis} characters"
    if label is None:
        return f"unknown label {record.get('label')!r} (expected e, n or c)"
    genre = str(record.get("genre") or "").strip()
    return RoundRow(
        round_number=round_number,
        external_id=uid.strip(),
        inputs={"hypothesis": hypothesis},
        target=label,
        split=split_for(uid.strip(), role),
        context={"premise": premise},
        tags=[f"genre:{genre}"] if genre else [],
        metadata={
            "dataset": DATASET_NAME,
            "source_file": where.split(" line ")[0],
            "source_round": round_number,
            "source_tag": record.get("tag"),
            "source_model_label": LABELS.get(str(record.get("model_label", "")).strip().lower()),
            "emturk": record.get("emturk"),
            "reason": br_to_newline(reason) if isinstance(reason := record.get("reason"), str) else reason,
            "genre": genre or None,
        },
        where=where,
    )


def read_anli(data_dir: Path, report: ImportReport, limits: tuple[int, int]) -> list[RoundRow]:
    """Every valid row of the ANLI files in ``data_dir``; skipped rows are added to ``report``.

    Args:
        limits: (premise, hypothesis) maximum lengths in characters.

    Raises:
        FileNotFoundError: naming the first missing file.
    """
    return read_round_files(
        data_dir,
        FILES,
        report,
        lambda record, number, role, where: _row(record, number, role, where, limits),
        dataset_name="ANLI",
    )


def import_anli(*, task: Task, data_dir: Path, progress: ProgressFactory = no_progress) -> ImportReport:
    """Import ANLI rounds 1-3 into ``task`` (the NLI task); see the module docstring.

    Returns:
        An ``ImportReport``; ``breakdown`` counts rows per round and split.

    Raises:
        FileNotFoundError: a file is missing (checked before anything is written).
    """

    cfg = task.cfg
    premise_spec = cfg.context_fields[0]
    limits = (
        int(premise_spec.get("max_length", DEFAULT_MAX_CONTEXT_LENGTH)),
        cfg.max_length_of(cfg.input_fields[0]),
    )
    report = ImportReport(source=DATASET_NAME)
    rows = read_anli(Path(data_dir), report, limits)
    import_round_rows(task=task, rows=rows, rounds=list(ROUNDS), report=report, progress=progress)
    return report
