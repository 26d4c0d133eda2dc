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

**Groups** (``group_tests``). Ten accounts that share the work of pushing one model, each with a handful of
votes, escape the per-voter test (too few votes each, or too little evidence in each). Across voters, for
each model m: with the ranking fitted on all counted votes, each voter's z_u,m (above, over their decisive
votes with m in them), and N_m = the number of voters with z_u,m > ``Z_MEMBER`` (one-sided 1%): how many
people chose m far more often than the ranking predicts. Under "everyone votes as the ranking predicts"
N_m is small, but its distribution depends on how the votes fall (who met m, how often, against whom), so
it is calibrated by a parametric bootstrap (Efron & Tibshirani 1993, ch. 6): the same voters' same battles
are replayed ``samples`` times with each decisive vote's winner drawn from the fitted ranking, giving each
model's null mean and standard deviation of N_m. The statistic is the standardised excess
(N_m - mean_m) / (sd_m + 1/2) (the 1/2 keeps a model whose null count never varies from dividing by 0),
and a model is flagged when its excess exceeds the (1 - ``level``) quantile of the **largest** excess over
all models in the replays: the chance that an honest arena flags any model is about ``level``. The
members of a flagged model's group are its voters with z_u,m > ``Z_MEMBER``; a few honest voters (about
the null mean) are among them, which the owner's review of the hold sorts out. The fit is not redone
without the group: its votes pull m's score up a little and so hide part of the excess, which makes the
test conservative, not wrong, and it is the same fit in the replays.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from .pairwise import DEFAULT_PRIOR, fit_bradley_terry

__all__ = ["GroupTest", "MIN_VOTES", "VoterTest", "Z_FLAG", "Z_MEMBER", "group_tests", "voter_tests"]

#: Decisive votes a voter needs to be tested.
MIN_VOTES = 10
#: One-sided 5% critical value of the standard normal.
Z_FLAG = 1.6448536269514722
#: One-sided 1% critical value: a voter's z_u,m above it counts toward model m's group.
Z_MEMBER = 2.3263478740408408
#: The least information (sum of P(1 - P) over a voter's decisive votes with m) for z_u,m to count: below
#: it, one lucky win of a weak model already passes Z_MEMBER, and honest noise would swamp the count.
MIN_INFORMATION = 1.0
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


@dataclass(frozen=True)
class GroupTest:
    """The group test of one model (module docstring, "Groups"): ``voters`` who chose it far more often
    than the ranking predicts (z_u,m > ``Z_MEMBER``, sorted), ``count`` = len(voters), the null ``expected``
    count and its standard deviation ``sd`` (parametric bootstrap), ``excess`` = (count - expected) /
    (sd + 1/2), ``threshold`` the replays' (1 - level) quantile of the largest excess over models, and
    ``flagged`` (excess > threshold, with at least two voters: one is the per-voter test's case)."""

    model: Hashable
    voters: tuple
    count: int
    expected: float
    sd: float
    excess: float
    threshold: float
    flagged: bool


def group_tests(
    votes: Sequence[tuple[Hashable, Hashable, Hashable, str]],
    *,
    prior: float = DEFAULT_PRIOR,
    samples: int = 200,
    level: float = 0.05,
    seed: int = 0,
) -> dict[Hashable, GroupTest]:
    """The group test (module docstring, "Groups") of every model with decisive votes.

    Args:
        votes: ``(voter, a, b, outcome)`` with outcome "a", "b", "tie" or "both_bad".
        samples: replays of the votes under the fitted ranking (the null distribution).
        level: the chance that an honest arena has any model flagged, about.
        seed: the replays' random seed (the test is repeatable).

    Returns:
        ``{model: GroupTest}``; {} without a decisive vote.

    Raises:
        ValueError: as ``core.pairwise.fit_bradley_terry``; ``samples`` < 1 or ``level`` not in (0, 1).
    """
    if samples < 1 or not 0 < level < 1:
        raise ValueError(f"samples must be at least 1 and level in (0, 1), not {samples} and {level}")
    models = list(dict.fromkeys(k for _, a, b, _ in votes for k in (a, b)))
    scores = fit_bradley_terry([(a, b, o) for _, a, b, o in votes], models=models, prior=prior)
    decisive = [(v, a, b, o) for v, a, b, o in votes if o in ("a", "b")]
    if not decisive:
        return {}
    voters = list(dict.fromkeys(v for v, *_ in decisive))
    voter_index = {v: i for i, v in enumerate(voters)}
    model_index = {m: i for i, m in enumerate(models)}
    n_models = len(models)
    u = np.array([voter_index[v] for v, *_ in decisive])
    a = np.array([model_index[x] for _, x, _, _ in decisive])
    b = np.array([model_index[x] for _, _, x, _ in decisive])
    theta = np.array([scores[m] for m in models]) * _LN10_400
    q = 1 / (1 + np.exp(theta[b] - theta[a]))  # P(a beats b)
    cells = len(voters) * n_models
    cell_a, cell_b = u * n_models + a, u * n_models + b
    variance = np.bincount(cell_a, q * (1 - q), cells) + np.bincount(cell_b, q * (1 - q), cells)
    spread = np.sqrt(np.where(variance > 0, variance, np.inf)).reshape(len(voters), n_models)

    informed = variance.reshape(len(voters), n_models) >= MIN_INFORMATION

    def counts(a_won: np.ndarray) -> np.ndarray:
        """Voters with z_u,m > Z_MEMBER per model, for rows of outcomes (S, votes) -> (S, models)."""
        s = a_won.shape[0]
        rows = np.arange(s)[:, None] * cells
        favour = np.bincount((rows + cell_a).ravel(), (a_won - q).ravel(), s * cells) + np.bincount(
            (rows + cell_b).ravel(), ((1 - a_won) - (1 - q)).ravel(), s * cells
        )
        z = favour.reshape(s, len(voters), n_models) / spread
        return ((z > Z_MEMBER) & informed).sum(axis=1)

    observed = np.array([o == "a" for *_, o in decisive], dtype=float)
    rng = np.random.default_rng(seed)
    null = np.concatenate(
        [
            counts((rng.random((min(50, samples - k), len(q))) < q).astype(float))
            for k in range(0, samples, 50)
        ]
    )
    expected, sd = null.mean(axis=0), null.std(axis=0)
    largest = ((null - expected) / (sd + 0.5)).max(axis=1)
    threshold = float(np.quantile(largest, 1 - level))
    favour_observed = np.bincount(cell_a, observed - q, cells) + np.bincount(cell_b, q - observed, cells)
    z_observed = favour_observed.reshape(len(voters), n_models) / spread
    out = {}
    for m, i in model_index.items():
        members = tuple(
            sorted(
                (voters[k] for k in np.flatnonzero((z_observed[:, i] > Z_MEMBER) & informed[:, i])), key=str
            )
        )
        excess = float((len(members) - expected[i]) / (sd[i] + 0.5))
        out[m] = GroupTest(
            m,
            members,
            len(members),
            float(expected[i]),
            float(sd[i]),
            excess,
            threshold,
            excess > threshold and len(members) >= 2,
        )
    return out
