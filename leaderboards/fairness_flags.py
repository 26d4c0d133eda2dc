"""Leaderboard cells built against a model, the rank without them, and how far rounds agree on the order.

Phang et al. 2022 ("Adversarially constructed evaluation sets are more challenging, but may not be
fair", arXiv:2111.08181) show that a round's examples, written to fool its target, rank that target
(and models like it) below where other data would put it. So the leaderboard marks, for each model and
each round's scoring dataset:

* ``target``: the model was a target of that round (``RoundTarget``): the examples were written to fool
  it, so its score there is biased downwards;
* ``trained``: the model was trained on that round's own examples (its card's ``training.rounds``): the
  test split is separate, but written the same way against the same target.

A flagged model's rank without its flagged rounds recomputes the Dynascore of every model, with the
viewer's weights, on the scoring datasets that model is not flagged on (all models on the same columns,
so the ranking compares the same tests), and gives that model's place; static sets (HateCheck) are never
flagged. Kendall's tau between the orders
that each pair of rounds gives (``core.rank_correlation.kendall_tau``) says how far the rounds agree.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

from core.rank_correlation import kendall_tau
from models_registry.models import RegisteredModel, RoundTarget

from .dynascore import PERF, compute_dynascore
from .models import Dataset

TARGET = "target"
TRAINED = "trained"
#: What each flag means, for the legend and the cells' titles.
FLAG_TEXT = {
    TARGET: "the model was a target of this round: its examples were written to fool it",
    TRAINED: "the model was trained on this round's examples (another split, written the same way)",
}


def cell_flags(
    models: Sequence[RegisteredModel], datasets: Sequence[Dataset]
) -> dict[int, dict[int, list[str]]]:
    """``{model id: {dataset id: [flags]}}`` for the round datasets a model is flagged on (``TARGET``
    and/or ``TRAINED``, in that order); a model or dataset with no flag is absent.

    Only datasets with a round can be flagged. ``TRAINED`` reads ``card["training"]["rounds"]`` (the
    round numbers a target trained here was trained on); a card without it flags nothing.
    """
    by_round: dict[int, list[Dataset]] = {}
    for d in datasets:
        if d.round_id:
            by_round.setdefault(d.round_id, []).append(d)
    if not by_round:
        return {}
    targets = set(
        RoundTarget.objects.filter(model__in=list(models), round_id__in=list(by_round)).values_list(
            "model_id", "round_id"
        )
    )
    number_of = {d.round_id: d.round.number for ds in by_round.values() for d in ds}
    flags: dict[int, dict[int, list[str]]] = {}
    for m in models:
        training = (m.card or {}).get("training")
        trained_on = set(training.get("rounds") or []) if isinstance(training, dict) else set()
        for round_id, round_datasets in by_round.items():
            kinds = []
            if (m.pk, round_id) in targets:
                kinds.append(TARGET)
            if number_of[round_id] in trained_on:
                kinds.append(TRAINED)
            if kinds:
                for d in round_datasets:
                    flags.setdefault(m.pk, {})[d.pk] = kinds
    return flags


@dataclass(frozen=True)
class RoundAgreement:
    """Kendall's tau-b between the model orders two rounds give (their scoring datasets' mean perf),
    over the ``n`` models scored on both; ``tau`` None when it is undefined (fewer than 2 models, or one
    round ranks them all equal)."""

    rounds: tuple[int, int]
    tau: float | None
    n: int

    def as_dict(self) -> dict:
        """JSON-ready values."""
        return {"rounds": list(self.rounds), "tau": self.tau, "n": self.n}


def round_agreement(
    values: Mapping[int, Mapping[Hashable, Mapping[str, float | None]]], datasets: Sequence[Dataset]
) -> list[RoundAgreement]:
    """Kendall's tau for each pair of rounds with scoring datasets, in round order.

    Args:
        values: ``{model id: {dataset id: {metric: value}}}`` as ``build_leaderboard`` reads them; a
            round's figure for a model is the mean perf over that round's datasets it was scored on.
        datasets: the scoring datasets shown (static sets are ignored).
    """
    per_round: dict[int, list[int]] = {}
    for d in datasets:
        if d.round_id:
            per_round.setdefault(d.round.number, []).append(d.pk)
    figures: dict[int, dict[int, float]] = {}
    for number, ids in per_round.items():
        for model_id, by_dataset in values.items():
            perfs = [(by_dataset.get(i) or {}).get(PERF) for i in ids]
            perfs = [p for p in perfs if p is not None]
            if perfs:
                figures.setdefault(number, {})[model_id] = sum(perfs) / len(perfs)
    out = []
    for a, b in combinations(sorted(figures), 2):
        common = sorted(set(figures[a]) & set(figures[b]))
        tau = kendall_tau([figures[a][m] for m in common], [figures[b][m] for m in common])
        out.append(RoundAgreement(rounds=(a, b), tau=tau, n=len(common)))
    return out


def ranks_without_flagged(
    values: Mapping[int, Mapping[Hashable, Mapping[str, float | None]]],
    datasets: Sequence[Dataset],
    flags: Mapping[int, Mapping[int, list[str]]],
    *,
    dataset_weights: Mapping[int, float],
    metric_weights: Mapping[str, float],
    memory_ceiling: float,
    metrics: Sequence[str],
    spreads=None,
) -> dict[int, int | None]:
    """Each flagged model's rank with its own flagged rounds left out.

    For a model flagged on some datasets, every model is ranked by Dynascore (``compute_dynascore``,
    the same weights) on the scoring datasets that model is *not* flagged on, so the models it is
    compared with are measured on the same columns, and its rank there is returned. One computation per
    distinct set of flagged datasets.

    Returns:
        ``{model id: rank}`` for the flagged models (ties share a rank); None when no dataset is left
        or the model has no Dynascore there. Models with no flag are absent (their rank is the board's).
    """
    by_left_out: dict[frozenset[int], list[int]] = {}
    for model_id, per_dataset in flags.items():
        if model_id in values:
            by_left_out.setdefault(frozenset(per_dataset), []).append(model_id)
    ranks: dict[int, int | None] = {}
    for left_out, model_ids in by_left_out.items():
        kept = [d.pk for d in datasets if d.pk not in left_out]
        if not kept:
            ranks.update({m: None for m in model_ids})
            continue
        result = compute_dynascore(
            {m: {d: v for d, v in by_dataset.items() if d in kept} for m, by_dataset in values.items()},
            dataset_weights={d: dataset_weights.get(d, 1.0) for d in kept},
            metric_weights=metric_weights,
            memory_ceiling=memory_ceiling,
            metrics=metrics,
            spreads=(
                {m: {d: s for d, s in by_dataset.items() if d in kept} for m, by_dataset in spreads.items()}
                if spreads
                else None
            ),
        )
        by_key = result.by_key()
        ranks.update({m: (by_key[m].rank if m in by_key else None) for m in model_ids})
    return ranks
