"""Replay: feed real annotator-written examples from a dataset file through the create service.

Each row becomes an example of the task's current round written by a named replay user, scored by
that round's target models exactly as on the create page (``annotation.services.create_example``,
``source=replay``). The fooling rate of the replayed rows is their MER against the round's targets.

Input format: HatemojiBuild CSV (``entry_id, text, label_gold, round.base, split, ...``; see
docs/datasets.md, "The source files"). Only ``entry_id``, ``text`` and ``label_gold`` are required;
``round.base`` and ``split`` are needed only to filter on them.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from django.contrib.auth import get_user_model

from annotation.importers.common import normalise_hate_label, read_csv_rows
from annotation.models import Example
from annotation.services import ExampleError, create_example
from core.text_rules import ascii_id, normalise_newlines
from cycle.kinds import rules_for
from tasks.models import Round, Task

DEFAULT_REPLAY_USER = "replay-bot"
REQUIRED_COLUMNS = ("entry_id", "text", "label_gold")
#: Namespace of the replay client tokens: uuid5(REPLAY_NAMESPACE, "<round id>:<file name>:<entry id>").
REPLAY_NAMESPACE = uuid.UUID("6f1d8c2e-4b7a-5e39-9c1d-2a7b0e5f4c31")
#: HatemojiBuild's file names for each split (validation.csv holds split=dev).
SPLIT_ALIASES = {"validation": "dev", "valid": "dev", "dev": "dev", "train": "train", "test": "test"}


class ReplayError(Exception):
    """The replay cannot run as asked (not the current round, unsupported task, bad file); says why."""


@dataclass(frozen=True)
class ReplayRow:
    """One usable row of the file: its id, text and label (already in the task's spelling)."""

    entry_id: str
    text: str
    label: str
    source_round: int | None = None
    split: str = ""


@dataclass
class ReplayReport:
    """What one replay did.

    ``replayed`` counts rows sent through the service (``created`` new examples plus
    ``already_present`` from an earlier run); ``scored`` those with a model verdict; ``fooled`` those
    with ``model_wrong`` true. ``skipped`` holds one reason per unusable row, ``rejected`` one per row
    the service refused.
    """

    round_number: int
    read: int = 0
    replayed: int = 0
    created: int = 0
    already_present: int = 0
    scored: int = 0
    fooled: int = 0
    not_scored: int = 0
    skipped: list[str] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    example_ids: list[int] = field(default_factory=list)

    @property
    def fooling_rate(self) -> float | None:
        """``fooled / scored`` (the MER of the replayed examples), or None when nothing was scored."""
        return self.fooled / self.scored if self.scored else None

    def __str__(self) -> str:
        rate = self.fooling_rate
        rate_text = "n/a (no example was scored)" if rate is None else f"{rate:.1%}"
        return (
            f"round {self.round_number}: read {self.read}, replayed {self.replayed} "
            f"(created {self.created}, already present {self.already_present}), "
            f"skipped {len(self.skipped)}, rejected {len(self.rejected)}, not scored {self.not_scored}\n"
            f"fooling rate (MER): {self.fooled}/{self.scored} = {rate_text}"
        )


def client_token_for(round_: Round, file_name: str, entry_id: str) -> uuid.UUID:
    """The deterministic client token of one replayed row: uuid5 over (round id, file name, entry id).

    The file's base name is used, so the same file replayed from another folder is the same row.
    """
    return uuid.uuid5(REPLAY_NAMESPACE, f"{round_.pk}:{Path(file_name).name}:{entry_id}")


def read_replay_rows(
    path: Path | str,
    *,
    source_rounds: Iterable[int] | None = None,
    splits: Iterable[str] | None = None,
    skipped: list[str] | None = None,
) -> Iterator[ReplayRow]:
    """Yield the usable rows of a HatemojiBuild-format CSV, optionally filtered by source round and split.

    Texts get CRLF turned into LF (nothing else changes); labels ``1``/``0`` (and other known spellings)
    become ``hateful``/``not-hateful``. Rows with a problem are not yielded; their reason is appended to
    ``skipped`` when given.

    Raises:
        FileNotFoundError: no such file.
        ValueError: a required column is missing, or a filter needs a column the file lacks.
    """
    path = Path(path)
    wanted_rounds = {int(r) for r in source_rounds} if source_rounds else None
    wanted_splits = {SPLIT_ALIASES.get(s.strip().lower(), s.strip().lower()) for s in splits or []}
    required = list(REQUIRED_COLUMNS)
    if wanted_rounds:
        required.append("round.base")
    if wanted_splits:
        required.append("split")
    skipped = skipped if skipped is not None else []
    for row in read_csv_rows(path, required=tuple(required)):
        where = row.where(path.name)
        if row.problem:
            skipped.append(f"{where}: {row.problem}")
            continue
        values = row.values
        raw_round = values.get("round.base", "").strip()
        source_round = ascii_id(raw_round)  # never raises: '²' or a long number would stop the replay
        split = SPLIT_ALIASES.get(values.get("split", "").strip().lower(), "")
        if wanted_rounds is not None and source_round not in wanted_rounds:
            continue
        if wanted_splits and split not in wanted_splits:
            continue
        text = normalise_newlines(values["text"])
        label = normalise_hate_label(values["label_gold"])
        entry_id = values["entry_id"].strip()
        if not entry_id:
            skipped.append(f"{where}: empty entry_id")
        elif not text.strip():
            skipped.append(f"{where}: empty text")
        elif label is None:
            skipped.append(f"{where}: unknown label {values['label_gold']!r}")
        else:
            yield ReplayRow(entry_id, text, label, source_round, split)


def replay_user(username: str = DEFAULT_REPLAY_USER):
    """The named replay user, created (active, no usable password, not staff) if missing."""
    User = get_user_model()
    user, created = User.objects.get_or_create(
        username=username, defaults={"email": "", "is_staff": False, "is_superuser": False}
    )
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    return user


def replay_file(
    *,
    task: Task,
    round_number: int,
    path: Path | str,
    username: str = DEFAULT_REPLAY_USER,
    source_rounds: Iterable[int] | None = None,
    splits: Iterable[str] | None = None,
    limit: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> ReplayReport:
    """Replay the rows of ``path`` into round ``round_number`` of ``task`` through ``create_example``.

    The round must be the task's current, open round (``create_example`` writes only there). Each row
    is written by the replay user ``username`` (created if missing) with ``source=replay`` and the
    client token ``client_token_for(round, file name, entry_id)``, so a second run over the same rows
    adds nothing and reports the same fooling rate.

    Args:
        source_rounds: keep only rows whose ``round.base`` is one of these (HatemojiBuild: 5, 6, 7).
        splits: keep only rows of these splits (``train``, ``dev``/``validation``, ``test``).
        limit: replay at most this many usable rows (in file order).
        progress: called with the number of rows replayed so far, after each row.

    Returns:
        A ``ReplayReport`` with the counts and the fooling rate.

    Raises:
        ReplayError: not the current open round, a task whose examples are not one text field plus a
            label, or an unreadable file (missing, wrong columns).
    """
    current = task.current_round
    if current is None or current.number != round_number:
        now = f"round {current.number}" if current else "no round"
        raise ReplayError(
            f"round {round_number} is not the current round of {task.slug} (the current one is {now}); "
            "examples are only written into the current round"
        )
    if current.is_closed:
        raise ReplayError(f"round {round_number} of {task.slug} is closed")
    cfg = task.cfg
    required_fields = [f["name"] for f in cfg.input_fields if not f.get("optional", False)]
    if len(required_fields) != 1 or not rules_for(cfg).labelled or cfg.context_fields:
        raise ReplayError(
            f"task {task.slug} does not take one text and a label without a context; "
            "only such tasks (hate speech) can be replayed from a HatemojiBuild-format file"
        )
    field_name = required_fields[0]
    user = replay_user(username)
    report = ReplayReport(round_number=round_number)
    try:
        rows = read_replay_rows(path, source_rounds=source_rounds, splits=splits, skipped=report.skipped)
        for row in rows:
            if limit is not None and report.read >= limit:
                break
            report.read += 1
            token = client_token_for(current, str(path), row.entry_id)
            try:
                example, created = create_example(
                    task=task,
                    annotator=user,
                    inputs={field_name: row.text},
                    target=row.label,
                    client_token=token,
                    source=Example.Source.REPLAY,
                )
            except ExampleError as exc:
                report.rejected.append(f"entry_id {row.entry_id}: {exc}")
                continue
            report.replayed += 1
            report.created += int(created)
            report.already_present += int(not created)
            report.example_ids.append(example.pk)
            if example.model_wrong is None:
                report.not_scored += 1
            else:
                report.scored += 1
                report.fooled += int(example.model_wrong)
            if progress is not None:
                progress(report.replayed)
    except (FileNotFoundError, ValueError) as exc:
        raise ReplayError(str(exc)) from exc
    return report
