"""Reads of the side-by-side ratings (docs/generative.md, "Several models in one conversation"): per model,
how people rated its answers to first messages, with 95% intervals clustered by person; the rated pairs as
arena votes (``generative_bench.arena.side_by_side`` draws them on the task page and counts them in the
ranking).

Per model, over the answers that were rated (an answer that failed has no rating):

* ``shown``: its rated answers; ``people``: the writers who rated one;
* ``mean_score``: the mean 1-100 rating, ``sum of scores / shown`` (every rating weighs the same), its
  interval the studentized cluster bootstrap over people of that ratio (``core.clustered.
  clustered_ratio_interval``: a person's ratings move together: their taste, their prompts);
* ``failure_rate``: rated answers whose rubric answers judge a failure, over ``shown``; ``chosen_rate``:
  answers the writer went on with, over ``shown`` (with k models side by side, 1/k on average over the
  models); both ``core.clustered.clustered_rates``, the people resampled once for the whole table.

With fewer than ``core.clustered.MIN_PEOPLE`` people a model has figures and no interval.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from annotation.models import CandidateRating
from core.clustered import ClusteredRate, clustered_rates, clustered_ratio_interval


@dataclass(frozen=True)
class ModelRatings:
    """One model's row of the ratings table (module docstring); ``model_id`` its registry id."""

    model_id: int
    model: str
    shown: int
    people: int
    mean_score: float
    score_interval: tuple[float, float] | None
    failure: ClusteredRate
    chosen: ClusteredRate

    def as_dict(self) -> dict:
        """The API's form: ``{model, shown, people, mean_score, score_interval, failure_rate,
        chosen_rate}``, the rates as ``ClusteredRate.as_dict``."""
        return {
            "model": self.model,
            "shown": self.shown,
            "people": self.people,
            "mean_score": self.mean_score,
            "score_interval": list(self.score_interval) if self.score_interval else None,
            "failure_rate": self.failure.as_dict(),
            "chosen_rate": self.chosen.as_dict(),
        }


def _ratings(task, round_number: int | None = None):
    rows = CandidateRating.objects.filter(turn__conversation__round__task=task)
    if round_number is not None:
        rows = rows.filter(turn__conversation__round__number=round_number)
    return rows


def model_ratings(task, round_number: int | None = None) -> list[ModelRatings]:
    """Per model, the side-by-side ratings of ``task`` (of round ``round_number`` only, when given), by
    mean score, highest first (module docstring). One query."""
    rows = list(
        _ratings(task, round_number).values_list(
            "turn__model_id",
            "turn__model__name",
            "turn__conversation__annotator_id",
            "score",
            "failed",
            "chosen",
        )
    )
    if not rows:
        return []
    people = sorted({r[2] for r in rows})
    models = sorted({(r[0], r[1]) for r in rows})
    person_at = {p: i for i, p in enumerate(people)}
    model_at = {m[0]: j for j, m in enumerate(models)}
    shape = (len(people), len(models))
    shown, scores, failed, chosen = (np.zeros(shape) for _ in range(4))
    for model_id, _name, person, score, fail, pick in rows:
        i, j = person_at[person], model_at[model_id]
        shown[i, j] += 1
        scores[i, j] += score
        failed[i, j] += fail
        chosen[i, j] += pick
    failures = clustered_rates(failed, shown)
    choices = clustered_rates(chosen, shown)
    out = []
    for j, (model_id, name) in enumerate(models):
        who = shown[:, j] > 0
        out.append(
            ModelRatings(
                model_id=model_id,
                model=name,
                shown=int(shown[:, j].sum()),
                people=int(who.sum()),
                mean_score=float(scores[:, j].sum() / shown[:, j].sum()),
                score_interval=clustered_ratio_interval(scores[who, j], shown[who, j]),
                failure=failures[j],
                chosen=choices[j],
            )
        )
    return sorted(out, key=lambda r: (-r.mean_score, r.model))


def rated_pairs(task) -> list[tuple[int, int, int, str, int, str, str]]:
    """Every pair of rated answers to one first message, as arena data: ``(model A id, model B id, score A,
    score B, writer id, answer A, answer B)`` with A the earlier slot, in the order the conversations were
    rated. ``k`` answers rated give k(k-1)/2 pairs; two answers of one model (never drawn so) are left
    out."""
    rows = (
        _ratings(task)
        .order_by("turn__conversation_id", "turn__slot")
        .values_list(
            "turn__conversation_id",
            "turn__model_id",
            "score",
            "turn__conversation__annotator_id",
            "turn__answer",
        )
    )
    by_conversation: dict[int, list[tuple]] = defaultdict(list)
    for conversation, model, score, writer, answer in rows:
        by_conversation[conversation].append((model, score, writer, answer))
    pairs = []
    for rated in by_conversation.values():
        for (ma, sa, writer, aa), (mb, sb, _w, ab) in combinations(rated, 2):
            if ma != mb:
                pairs.append((ma, mb, sa, sb, writer, aa, ab))
    return pairs


def outcome(score_a: int, score_b: int) -> str:
    """A rated pair as an arena vote (``core.pairwise.Vote.outcome``): "a" when A was rated higher, "b"
    when B was, "tie" when equal."""
    return "a" if score_a > score_b else "b" if score_b > score_a else "tie"
