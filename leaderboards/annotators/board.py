"""Annotator leaderboards (docs/crowd.md, "Annotator leaderboards"): per task, or per round, the people
who wrote examples, ranked by verified model-fooling examples, then vMER; in a competition round
(``Round.is_competition``) the final table, ranked by vMER, then verified model-fooling.

Counted over collected examples (written here, not retracted, not imported; ``annotation.selectors.
collected_examples``), per author:

* ``collected``: their examples; ``scored``: of those, with a known model verdict (``model_wrong`` not
  None); ``verified``: model-fooling and settled ``validated_correct``;
* ``vmer``: ``verified / scored`` (``tasks.round_stats.rate``; None when nothing is scored);
* ``rejected``: settled ``validated_incorrect``; ``flagged``: settled ``flagged`` or flagged by the author.

People are named by a stable per-task pseudonym (``annotator_pseudonym``) unless they opted in on their
profile page (``User.show_display_name`` with a non-empty ``User.display_name``).
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

from django.conf import settings
from django.db.models import Count, Q

from annotation import selectors as annotation_selectors
from annotation.exports import PSEUDONYM_HEX_LENGTH, PSEUDONYM_PREFIX
from annotation.models import Example
from tasks.models import Round, Task
from tasks.round_stats import rate


def annotator_pseudonym(task_id: int, user_id: int, *, key: str | bytes | None = None) -> str:
    """A person's name on ``task``'s annotator leaderboards when they did not opt in: ``anon-`` + 16 hex
    digits of HMAC-SHA256 of ``"task:<task id>:<user id>"`` under ``settings.DYNABENCH_EXPORT_KEY`` (the
    key of ``annotation.exports.pseudonym``, whose messages are ``"<round id>:<user id>"``, so the two
    never coincide). Stable across rounds of one task; unrelated between tasks and to the exports."""
    key = settings.DYNABENCH_EXPORT_KEY if key is None else key
    key_bytes = key.encode("utf-8") if isinstance(key, str) else key
    digest = hmac.new(key_bytes, f"task:{task_id}:{user_id}".encode(), hashlib.sha256).hexdigest()
    return PSEUDONYM_PREFIX + digest[:PSEUDONYM_HEX_LENGTH]


@dataclass(frozen=True)
class AnnotatorRow:
    """One person on the board (module docstring); ``rank`` is shared by equal ranking keys (1, 2, 2,
    4); ``is_pseudonym`` False when ``name`` is their opted-in display name."""

    rank: int
    name: str
    is_pseudonym: bool
    collected: int
    scored: int
    verified: int
    rejected: int
    flagged: int

    @property
    def vmer(self) -> float | None:
        return rate(self.verified, self.scored)


@dataclass(frozen=True)
class AnnotatorBoard:
    """The board of ``task`` (every round when ``round`` is None). ``is_final_table``: ``round`` is a
    competition round, ranked by vMER; ``quota`` its ``examples_per_participant`` (None otherwise)."""

    task: Task
    round: Round | None
    rows: list[AnnotatorRow]
    is_final_table: bool = False
    quota: int | None = None

    @property
    def title(self) -> str:
        if self.is_final_table:
            return f"Final table · round {self.round.number}"
        return f"Annotators · round {self.round.number}" if self.round else "Annotators · all rounds"


def _ranking_key(row: dict, final: bool) -> tuple:
    vmer = rate(row["verified"], row["scored"])
    vmer = -1.0 if vmer is None else vmer  # not measured ranks below every measured rate
    return (-vmer, -row["verified"]) if final else (-row["verified"], -vmer)


def annotator_board(task: Task, round_: Round | None = None) -> AnnotatorBoard:
    """The annotator leaderboard of ``task`` or of one of its rounds, ranked (one query).

    Ordered by verified model-fooling desc, then vMER desc; for a competition round (the final table)
    by vMER desc, then verified model-fooling desc; equal keys share a rank and are listed by name.
    """
    examples = annotation_selectors.collected_examples().filter(round__task=task, annotator__isnull=False)
    if round_ is not None:
        examples = examples.filter(round=round_)
    fooling = Q(model_wrong=True)
    grouped = (
        examples.values("annotator_id", "annotator__display_name", "annotator__show_display_name")
        .order_by()
        .annotate(
            collected=Count("pk"),
            scored=Count("pk", filter=Q(model_wrong__isnull=False)),
            verified=Count("pk", filter=fooling & Q(status=Example.Status.VALIDATED_CORRECT)),
            rejected=Count("pk", filter=Q(status=Example.Status.VALIDATED_INCORRECT)),
            flagged=Count("pk", filter=Q(status=Example.Status.FLAGGED) | Q(is_flagged_by_annotator=True)),
        )
    )
    final = bool(round_ is not None and round_.is_competition)
    rows = []
    for r in grouped:
        opted_in = r["annotator__show_display_name"] and r["annotator__display_name"].strip()
        r["name"] = (
            r["annotator__display_name"].strip()
            if opted_in
            else annotator_pseudonym(task.pk, r["annotator_id"])
        )
        r["is_pseudonym"] = not opted_in
        rows.append(r)
    rows.sort(key=lambda r: (_ranking_key(r, final), r["name"]))
    ranked, previous, rank = [], None, 0
    for position, r in enumerate(rows, start=1):
        key = _ranking_key(r, final)
        if key != previous:
            rank, previous = position, key
        ranked.append(
            AnnotatorRow(
                rank=rank,
                name=r["name"],
                is_pseudonym=r["is_pseudonym"],
                collected=r["collected"],
                scored=r["scored"],
                verified=r["verified"],
                rejected=r["rejected"],
                flagged=r["flagged"],
            )
        )
    return AnnotatorBoard(
        task=task,
        round=round_,
        rows=ranked,
        is_final_table=final,
        quota=round_.examples_per_participant if final else None,
    )
