"""How fragile is a model's Bradley-Terry rank? The fewest votes whose removal changes it.

Pure functions (numpy, no Django). Huang et al. (2025, "Dropping Just a Handful of Preferences Can
Change Top Large Language Model Rankings") found that removing 2 of Chatbot Arena's 57,477 votes changes
its top model; a rank printed without that fragility misleads. Finding the fewest votes exactly is a
subset search (exponential); as they do, a greedy search gives an **upper bound**:

1. Fit the ranking (``core.pairwise.fit_bradley_terry``, the arena's prior). The model's **rivals** are
   its nearest neighbours by score: the one just above (the rank improves when the model passes it) and
   the one just below or level with it (the rank worsens when that one rises above the model).
2. Against each rival, repeat: every distinct vote that could narrow the gap (a vote of the model or of
   the rival: its wins, losses and ties) is scored by its **influence**, the first-order change of the
   gap when that one vote is removed: with log-strengths theta at the fit, H the Hessian of the negative
   log-likelihood (the graph Laplacian weighted by (n_ij + prior) q_ij (1 - q_ij)) and g the removed
   vote's gradient (for a win of i over j, (1 - q_ij)(e_i - e_j); for a tie, (1/2 - q_ij)(e_i - e_j)),
   theta moves by -H⁺ g (Broderick, Giordano & Meager 2020, "An automatic finite-sample robustness
   metric", the approximation Huang et al. use). The vote that narrows the gap most is removed and the
   ranking refitted exactly; this stops when the rank has changed (in the refit, not the approximation),
   or after ``max_removals``.
3. The model's fragility is the smaller count of the two searches: "removing these k votes changes its
   rank" is then checked, so k is an upper bound on the fewest; None when neither search changed the rank
   within ``max_removals`` ("more than max_removals").

Ranks are ``core.pairwise.Ranking.rank_of``'s (1 + the models with a higher score), with scores within
``LEVEL_POINTS`` of each other counted as level.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from .pairwise import DEFAULT_PRIOR, Vote, fit_bradley_terry

__all__ = ["Fragility", "fewest_removals_exhaustive", "rank_fragility", "rank_of"]

#: Removals tried against each rival before giving up.
DEFAULT_MAX_REMOVALS = 50
#: Scores closer than this (in points) count as level: the fit converges to about 2e-5 points, so a
#: symmetric arena's equal scores differ by float noise that must not read as a changed rank.
LEVEL_POINTS = 1e-3
_LN_POINTS = 400 / math.log(10)


@dataclass(frozen=True)
class Fragility:
    """A model's rank and the fewest votes found whose removal changes it (an upper bound on the fewest).

    ``removals``: that count, None when no change was found within ``max_removals`` per rival;
    ``rival``: the model that passed it or that it passed; ``direction``: "down" (a model below passes
    it) or "up" (it passes the model above); ``removed``: the votes removed, as ``(a, b, outcome)``.
    """

    key: Hashable
    rank: int
    removals: int | None
    rival: Hashable | None
    direction: str | None
    removed: tuple[tuple, ...]
    max_removals: int

    def as_dict(self) -> dict:
        return {
            "rank": self.rank,
            "removals": self.removals,
            "direction": self.direction,
            "max_removals": self.max_removals,
        }


def _canonical(vote) -> tuple:
    a, b, outcome = (vote.a, vote.b, vote.outcome) if isinstance(vote, Vote) else vote
    return (a, b, "tie" if outcome == "both_bad" else outcome)


def rank_of(scores: dict, key: Hashable) -> int:
    """1 + the number of models whose score is higher than ``key``'s by more than ``LEVEL_POINTS``."""
    return 1 + sum(1 for s in scores.values() if s > scores[key] + LEVEL_POINTS)


def _influence(scores: dict, counts: Counter, prior: float, key, rival, candidates) -> dict:
    """The first-order change of (score[key] - score[rival]), in score points, when each of ``candidates``
    (canonical votes) is removed once (module docstring, step 2)."""
    models = list(scores)
    index = {k: i for i, k in enumerate(models)}
    theta = np.array([(scores[k] - 1000.0) / _LN_POINTS for k in models])
    pairs: Counter = Counter()
    for (a, b, _), n in counts.items():
        pairs[frozenset((a, b))] += n
    hessian = np.zeros((len(models), len(models)))
    for pair, n in pairs.items():
        i, j = (index[k] for k in pair)
        q = 1 / (1 + math.exp(theta[j] - theta[i]))
        w = (n + prior) * q * (1 - q)
        hessian[i, i] += w
        hessian[j, j] += w
        hessian[i, j] -= w
        hessian[j, i] -= w
    inverse = np.linalg.pinv(hessian)
    contrast = np.zeros(len(models))
    contrast[index[key]] += 1
    contrast[index[rival]] -= 1
    effect = {}
    for a, b, outcome in candidates:
        i, j = index[a], index[b]
        q = 1 / (1 + math.exp(theta[j] - theta[i]))  # P(a beats b)
        weight = {"a": 1 - q, "b": -q, "tie": 0.5 - q}[outcome]
        gradient = np.zeros(len(models))
        gradient[i], gradient[j] = weight, -weight
        effect[(a, b, outcome)] = float(contrast @ (-inverse @ gradient)) * _LN_POINTS
    return effect


def _search(
    votes: list[tuple], scores: dict, key, rival, direction: str, prior: float, max_removals: int, models
):
    """Greedy removals against ``rival`` (module docstring, step 2), from the fit of all ``votes``
    (``scores``): the removed votes when the rank changed, else None."""
    counts = Counter(votes)
    removed: list[tuple] = []
    start = rank_of(scores, key)
    sign = 1 if direction == "down" else -1  # the gap to close: key - rival below, rival - key above
    for _ in range(max_removals):
        candidates = [v for v in counts if counts[v] and ({v[0], v[1]} & {key, rival})]
        if not candidates:
            return None
        effect = _influence(scores, +counts, prior, key, rival, candidates)
        # Narrowing the gap: "down" wants key - rival to fall, "up" wants it to rise.
        best = min(candidates, key=lambda v: (sign * effect[v], str(v)))
        counts[best] -= 1
        removed.append(best)
        scores = fit_bradley_terry(list((+counts).elements()), models=models, prior=prior)
        if rank_of(scores, key) != start:
            return removed
    return None


def rank_fragility(
    votes: Sequence,
    key: Hashable,
    *,
    models: Sequence | None = None,
    prior: float = DEFAULT_PRIOR,
    max_removals: int = DEFAULT_MAX_REMOVALS,
) -> Fragility:
    """The fewest votes found whose removal changes ``key``'s rank (module docstring): a greedy search
    against the nearest model above and the nearest below, each up to ``max_removals`` removals.

    Args:
        votes: ``core.pairwise.Vote`` objects or ``(a, b, outcome)`` tuples ("both_bad" counts as a tie).
        key: the model whose rank is probed; must be among the votes' or ``models``' keys.
        models: every model ranked (a model without votes has 1000), as ``fit_bradley_terry``.

    Raises:
        KeyError: ``key`` is not a ranked model.
        ValueError: ``max_removals`` below 1, or a vote ``fit_bradley_terry`` refuses.
    """
    if max_removals < 1:
        raise ValueError(f"max_removals must be 1 or more, not {max_removals}")
    canonical = [_canonical(v) for v in votes]
    # Every model stays ranked while votes are removed (one that loses all its votes sits at 1000).
    models = list(models) if models is not None else list(dict.fromkeys(k for v in canonical for k in v[:2]))
    scores = fit_bradley_terry(canonical, models=models, prior=prior)
    if key not in scores:
        raise KeyError(key)
    rank = rank_of(scores, key)
    # A model level with ``key`` counts as below: the rank worsens when it rises above ``key``.
    above = [k for k in scores if k != key and scores[k] > scores[key] + LEVEL_POINTS]
    below = [k for k in scores if k != key and scores[k] <= scores[key] + LEVEL_POINTS]
    searches = []
    if above:  # the nearest model above: passing it improves the rank
        searches.append((min(above, key=lambda k: (scores[k], str(k))), "up"))
    if below:
        searches.append((max(below, key=lambda k: (scores[k], str(k))), "down"))
    best: tuple | None = None
    for rival, direction in searches:
        removed = _search(canonical, scores, key, rival, direction, prior, max_removals, models)
        if removed is not None and (best is None or len(removed) < len(best[2])):
            best = (rival, direction, removed)
    if best is None:
        return Fragility(key, rank, None, None, None, (), max_removals)
    rival, direction, removed = best
    return Fragility(key, rank, len(removed), rival, direction, tuple(removed), max_removals)


def fewest_removals_exhaustive(
    votes: Sequence,
    key: Hashable,
    limit: int,
    *,
    models: Sequence | None = None,
    prior: float = DEFAULT_PRIOR,
) -> int | None:
    """The exact fewest votes (up to ``limit``) whose removal changes ``key``'s rank, by refitting on every
    subset of removals: C(n, 1) + ... + C(n, limit) fits, so for small arenas only (it checks the greedy
    search, ``rank_fragility``). None when no subset of ``limit`` or fewer changes it.

    Raises:
        KeyError: ``key`` is not a ranked model; ValueError: as ``fit_bradley_terry``.
    """
    canonical = [_canonical(v) for v in votes]
    models = list(models) if models is not None else list(dict.fromkeys(k for v in canonical for k in v[:2]))
    scores = fit_bradley_terry(canonical, models=models, prior=prior)
    start = rank_of(scores, key)
    for k in range(1, limit + 1):
        for drop in itertools.combinations(range(len(canonical)), k):
            dropped = set(drop)
            kept = [v for i, v in enumerate(canonical) if i not in dropped]
            if rank_of(fit_bradley_terry(kept, models=models, prior=prior), key) != start:
                return k
    return None
