"""Are a voter's arena votes consistent with the ranking? A per-voter test, as Chatbot Arena tests each user.

Pure functions (numpy, no Django). A voter who pushes one model votes for it against models the ranking
says are better, far more often than chance allows. For each voter u:

1. The ranking **without u's votes** (``core.pairwise.fit_bradley_terry``, the arena's prior): u's votes
   cannot pull it toward themselves.
2. For each of u's decisive votes (a tie and "both bad" say nothing of a direction and are skipped) between
   i and j, q = P(i beats j) under that ranking, and the log-likelihood of what u chose, l = log q when i
   won, log(1 - q) when j did. Under "u votes as the ranking predicts", E[l] = q log q + (1 - q) log(1 - q)
   and Var[l] = q (1 - q) (log(q / (1 - q)))² (a two-point variable).
3. z = (sum l - sum E[l]) / sqrt(sum Var[l]): far below 0 when u's choices are less likely than an honest
   voter's (the score of a likelihood-ratio test against "u's choices are their own"). By the central limit
   theorem z is about standard normal for an honest voter with enough votes; the test flags u when
   z < -``Z_FLAG`` (one-sided, 5%), and only with at least ``MIN_VOTES`` decisive votes (too few are not
   tested).

**Which model.** For each model m in u's decisive votes, how much more often u chose m than the ranking
predicts: z_m = sum(1[m won] - P(m wins)) / sqrt(sum P(m wins)(1 - P(m wins))) over those votes (a score
test of a bonus for m). ``pushed`` is the model with the largest z_m: the one a flagged voter favours.

This is the per-user half of voter integrity; groups of accounts that share the work (each with few votes)
are not caught by it.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from .pairwise import DEFAULT_PRIOR, fit_bradley_terry

__all__ = ["MIN_VOTES", "VoterTest", "Z_FLAG", "voter_tests"]

#: Decisive votes a voter needs to be tested.
MIN_VOTES = 10
#: One-sided 5% critical value of the standard normal.
Z_FLAG = 1.6448536269514722
_LN10_400 = math.log(10) / 400


@dataclass(frozen=True)
class VoterTest:
    """One voter's test: ``votes`` decisive votes tested, ``z`` (None when fewer than ``MIN_VOTES``),
    ``flagged`` (z < -Z_FLAG), ``pushed`` the model the voter favours most against the ranking and
    ``pushed_z`` its z_m (module docstring; None without a decisive vote)."""

    voter: Hashable
    votes: int
    z: float | None
    flagged: bool
    pushed: Hashable | None
    pushed_z: float | None


def _terms(q: float, won: bool) -> tuple[float, float, float]:
    q = min(max(q, 1e-12), 1 - 1e-12)
    log_q, log_r = math.log(q), math.log(1 - q)
    return (
        log_q if won else log_r,
        q * log_q + (1 - q) * log_r,
        q * (1 - q) * (log_q - log_r) ** 2,
    )


def _z(terms: list[tuple[float, float, float]]) -> float | None:
    variance = sum(t[2] for t in terms)
    if not terms or variance <= 0:
        return None
    return (sum(t[0] for t in terms) - sum(t[1] for t in terms)) / math.sqrt(variance)


def voter_tests(
    votes: Sequence[tuple[Hashable, Hashable, Hashable, str]], *, prior: float = DEFAULT_PRIOR
) -> dict[Hashable, VoterTest]:
    """The per-voter test (module docstring) of every voter.

    Args:
        votes: ``(voter, a, b, outcome)`` with outcome "a", "b", "tie" or "both_bad".

    Returns:
        ``{voter: VoterTest}``, one fit of the ranking per voter.

    Raises:
        ValueError: as ``core.pairwise.fit_bradley_terry`` (an unknown outcome, a model against itself).
    """
    by_voter: dict[Hashable, list[tuple]] = defaultdict(list)
    for voter, a, b, outcome in votes:
        by_voter[voter].append((a, b, outcome))
    models = list(dict.fromkeys(k for _, a, b, _ in votes for k in (a, b)))
    out = {}
    for voter, own in by_voter.items():
        others = [(a, b, o) for v, a, b, o in votes if v != voter]
        scores = fit_bradley_terry(others, models=models, prior=prior)
        terms = []
        favour: dict[Hashable, list[float]] = defaultdict(lambda: [0.0, 0.0])  # sum of (won - p), of p(1-p)
        for a, b, outcome in own:
            if outcome not in ("a", "b"):
                continue
            q = 1 / (1 + math.exp(-(scores[a] - scores[b]) * _LN10_400))
            terms.append(_terms(q, outcome == "a"))
            for model, p, won in ((a, q, outcome == "a"), (b, 1 - q, outcome == "b")):
                favour[model][0] += won - p
                favour[model][1] += p * (1 - p)
        z = _z(terms) if len(terms) >= MIN_VOTES else None
        pushed = {m: d / math.sqrt(v) for m, (d, v) in favour.items() if v > 0}
        worst = max(pushed, key=lambda m: (pushed[m], str(m))) if pushed else None
        out[voter] = VoterTest(
            voter,
            len(terms),
            z,
            z is not None and z < -Z_FLAG,
            worst,
            pushed[worst] if worst is not None else None,
        )
    return out
