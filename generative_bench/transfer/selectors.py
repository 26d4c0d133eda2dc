"""The transfer matrix of a red-teaming task: a row per generative model, a column per round, and in
each cell the share of that round's conversations on which the model failed (docs/benchmarking.md,
"Transfer matrix"): the generative form of the cycle matrix.

Where a cell's figure comes from, for model m and round r:

* **people**: m's answers that people judged (``replay.selectors.people_rates``): for r's own target,
  the round's attack success rate (its conversations as people held them); for another model, the
  settled ratings of its replayed answers to r's prompts. Its interval is across the people who wrote
  the conversations (``core.clustered``; ``Rate.clustered``).
* else **the corrected judge**: the first trusted active judge (by name; ``judges.selectors.judge_rates``)
  on m's outputs of r that people never judged, corrected for the judge's errors in r (Rogan-Gladen,
  ``core.rogan_gladen``; ``judges.selectors.corrected_by_model``), with its bootstrap interval;
* else nothing, with the reason (not replayed, no trusted judge, the correction refused).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from models_registry.models import RegisteredModel, RoundTarget
from models_registry.selectors import ModelLabels, models_visible_to
from tasks.models import Task

from ..judges.selectors import corrected_by_model, judge_rates
from ..replay.selectors import people_rates

PEOPLE, JUDGE = "people", "corrected judge"


@dataclass(frozen=True)
class TransferCell:
    """One model on one round's conversations: ``rate`` in [0, 1] with its 95% ``interval``, ``source``
    (``PEOPLE`` or ``JUDGE``), ``n`` the answers behind it and ``people`` who wrote the conversations
    (people's figures only); all None with ``note`` saying why there is no figure."""

    rate: float | None = None
    interval: tuple[float, float] | None = None
    source: str = ""
    n: int = 0
    people: int | None = None
    note: str = ""

    def as_dict(self) -> dict:
        return {
            "rate": self.rate,
            "interval": list(self.interval) if self.interval else None,
            "source": self.source or None,
            "n": self.n,
            "people": self.people,
            "note": self.note,
        }


@dataclass(frozen=True)
class TransferRow:
    """A model as the viewer may name it, the rounds it was the target of, and a cell per round."""

    model_id: int
    name: str
    target_of: tuple[int, ...]
    cells: list[TransferCell]


@dataclass(frozen=True)
class TransferMatrix:
    """The matrix: ``rounds`` (numbers, in order), ``rows`` (models, round targets first by round, then
    the others by name), and ``judge`` the judge standing in where people did not judge (None: none
    trusted)."""

    task: str
    rounds: list[int]
    rows: list[TransferRow]
    judge: str | None = None
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "task": self.task,
            "rounds": self.rounds,
            "judge": self.judge,
            "rows": [
                {
                    "model_id": row.model_id,
                    "name": row.name,
                    "target_of": list(row.target_of),
                    "cells": [cell.as_dict() for cell in row.cells],
                }
                for row in self.rows
            ],
        }


def _people_cell(rate) -> TransferCell | None:
    if rate is None or rate.rate is None:
        return None
    clustered = rate.clustered
    return TransferCell(
        rate=rate.rate,
        interval=clustered.interval if clustered is not None else None,
        source=PEOPLE,
        n=rate.judged,
        people=clustered.people if clustered is not None else None,
        note="" if clustered is None or clustered.interval is not None else "too few people for an interval",
    )


def transfer_matrix(task: Task, user) -> TransferMatrix:
    """The transfer matrix of ``task`` as ``user`` may see it (module docstring): the models ``user`` may
    see, named as on the leaderboard ("Anonymous model N" for one they may not identify)."""
    rounds = list(task.rounds.order_by("number"))
    visible = list(models_visible_to(user, task))
    name = ModelLabels(user, task)
    targets: dict[int, list[int]] = {}
    for model_id, number in RoundTarget.objects.filter(round__task=task).values_list(
        "model_id", "round__number"
    ):
        targets.setdefault(model_id, []).append(number)
    people = people_rates(task)
    trusted = [c.judge for c in judge_rates(task) if c.trusted]
    judge = trusted[0] if trusted else None
    corrected = corrected_by_model(judge, [r.pk for r in rounds]) if judge is not None else {}

    def cell(model: RegisteredModel, round_) -> TransferCell:
        found = _people_cell(people.get((model.pk, round_.pk)))
        if found is not None:
            return found
        if judge is None:
            return TransferCell(note="people did not judge these answers, and no judge is trusted")
        figure = corrected.get((model.pk, round_.pk))
        if figure is None:
            return TransferCell(note="not replayed or not judged")
        if figure.corrected is None:
            return TransferCell(n=figure.outputs, note=f"judge not corrected: {figure.refused}")
        return TransferCell(rate=figure.corrected, interval=figure.interval, source=JUDGE, n=figure.outputs)

    def order(model: RegisteredModel):
        first = min(targets.get(model.pk, [])) if model.pk in targets else None
        return (first is None, first or 0, name(model).casefold(), model.pk)

    rows = [
        TransferRow(
            model.pk, name(model), tuple(sorted(targets.get(model.pk, []))), [cell(model, r) for r in rounds]
        )
        for model in sorted(visible, key=order)
    ]
    return TransferMatrix(
        task.slug, [r.number for r in rounds], rows, judge.name if judge is not None else None
    )
