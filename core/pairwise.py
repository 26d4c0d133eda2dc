"""Bradley-Terry ranking from pairwise votes (the arena, as Chatbot Arena), with bootstrap intervals.

Pure functions (numpy, no Django). Models are any hashable keys (model ids, names); a vote says which of
two models answered better: ``"a"``, ``"b"``, ``"tie"`` or ``"both_bad"``.

Model (Bradley & Terry 1952; Zermelo 1929): each model i has a strength p_i > 0 and
P(i beats j) = p_i / (p_i + p_j). A tie, and "both bad", counts as half a win to each side, as Chatbot
Arena's published notebook does (its ``compute_mle_elo`` weighs a win 2 and a tie 1 to each side).

Fit: maximum likelihood by Hunter's MM algorithm (D. R. Hunter 2004, "MM algorithms for generalized
Bradley-Terry models", Annals of Statistics 32(1), eq. 3): with W_i model i's wins (ties as halves) and
N_ij the votes between i and j, repeat p_i <- W_i / sum_j N_ij / (p_i + p_j) for every model at once,
then rescale, until no log-strength moves by more than ``tol``. Each step increases the likelihood, and
it converges to the maximum when that exists (Hunter 2004, Theorem 1). MM crawls where the comparison
graph is thinly linked (a chain of models, two groups joined by a few votes: thousands of steps), so
each step also computes a Newton step on the log-likelihood in log-strengths (gradient: W_i minus the
expected wins; Hessian: minus the graph Laplacian with weights N_ij q_ij (1 - q_ij), q_ij = P(i beats
j)) and keeps whichever of the two gains more likelihood: every step gains at least what MM's would,
and near the maximum the convergence is quadratic (5 to 60 steps in all). Bootstrap samples, which lie
near the estimate, first try a step with the Hessian at the estimate (the chord method: one matrix
inverse for all samples and steps), and solve their own Hessian only where that step does worse than
MM's. Above 400 models with votes an M x M solve costs more than it saves: MM alone.
Vectorised with numpy on the list of pairs that played, and on many bootstrap samples at once.

Prior: a model that never lost (or never won) has an infinite maximum-likelihood strength. Each pair
of models that played at least once gets ``prior`` pseudo-ties (default 1: half a win to each side).
For one pair alone that is the Haldane-Anscombe correction, log((w + 1/2) / (l + 1/2)), which is the
posterior mode of the log-odds under Jeffreys' Beta(1/2, 1/2) prior on the win probability: 3 wins to
0 give a strength ratio of 7 (338 points) instead of infinity; 3 to 1 give 3.5 / 1.5 (147 points)
instead of 3 (191 points). The pull toward a tie fades as votes accumulate (15 to 5 gives 15.5 / 5.5 =
2.82 instead of 3). With pseudo-ties on every pair that played, every connected part of the comparison
graph has a unique finite estimate (Ford 1957's condition). Pairs that never played get none, so the
prior neither adds comparisons nor links separate parts. ``prior=0`` is taken as 1e-9 pseudo-ties: the
plain maximum likelihood where it is finite (to 1e-6 points), and a very large finite gap where it is
infinite (3 wins to 0: 400 log10(3 / 5e-10) = 3911 points), never an error. Scores are kept within
1000 +- 6000 points (a strength of 1e+-15), a bound only such extremes reach.

Scale (Elo-like, as Chatbot Arena): score = 1000 + 400 log10(p_i), with the strengths rescaled so that
their geometric mean is 1 over the models that have votes, so their mean score is 1000. A 400-point gap
means 10 to 1 odds; a strength ratio of 3 is 400 log10(3) = 190.85 points. Scores of two parts of the
comparison graph that no vote links cannot be compared: each part is centred on 1000 separately. A model
passed in ``models`` without any vote gets 1000 and the interval ``None``.

Intervals: bootstrap over votes (Efron & Tibshirani 1993, percentile interval; as Chatbot Arena):
votes are resampled with replacement, the model refitted (starting from the estimate: a warm start),
and the interval is the ((1 - confidence) / 2, (1 + confidence) / 2) quantiles of each model's
resampled scores. Resampling n votes draws the counts of each (pair, outcome) cell from a
multinomial(n, cell count / n), so the samples are drawn that way in one call, without a pass over the
votes. The prior's pseudo-ties stay on the pairs of the real votes in every sample (a pair that a sample
happens to miss keeps its pseudo-ties), so the comparison graph is the same in every sample. Each
interval is widened to include the estimate if it would not (the fit's tolerance or a very skewed
bootstrap distribution); that only makes it more cautious.

Serving (``draw_pair``): the next pair is drawn at random, never chosen, so that nobody can work it out
from the public ranking: P(pair i, j) = (w_i + w_j) / (1 + n_ij) / Z, with w a model's interval width in
score points (at least ``MIN_WIDTH``; a model without votes counts ``UNVOTED_WIDTH_FACTOR`` times the
widest interval; with no interval at all every w is 1), n_ij the votes between i and j, and Z the sum
over all pairs. Wide intervals and rarely played pairs come up more often, as in Chatbot Arena's active
sampling (Chiang et al. 2024, section 5: a pair is sampled in proportion to how much one more vote
would narrow its interval, which falls as the pair's votes grow), and every pair keeps a chance, as in
FastChat's weighted draw of both models (``gradio_block_arena_anony.get_battle_pair``). In production the
draw uses the operating system's cryptographic source (``secrets.SystemRandom``).
"""

from __future__ import annotations

import math
import random
import secrets
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "DEFAULT_PRIOR",
    "OUTCOMES",
    "Ranking",
    "Vote",
    "fit_bradley_terry",
    "draw_pair",
    "pair_probabilities",
    "pair_weights",
    "rank",
]

#: A vote's outcomes: A answered better, B did, a tie, both bad (a tie too, for the ranking).
OUTCOMES = ("a", "b", "tie", "both_bad")
#: Pseudo-ties added to every pair of models that played (module docstring, "Prior").
DEFAULT_PRIOR = 1.0
#: Score of a model with no vote, and the mean score of the models with votes.
BASE_SCORE = 1000.0
#: Score points per unit of natural-log strength: 400 log10(p) = (400 / ln 10) ln(p).
_POINTS = 400 / math.log(10)
#: Log-strengths are kept within +-ln(1e15), scores within 1000 +- 6000 (reached with a prior near 0 only,
#: in practice: an infinite maximum-likelihood estimate).
_LOG_BOUND = 15 * math.log(10)
#: ``prior=0`` is fitted with this many pseudo-ties, so that the maximum always exists (module docstring).
_PRIOR_FLOOR = 1e-9
#: Convergence: no log-strength moves by more than this in a step (1.7e-5 score points).
_TOL = 1e-7
#: Steps before the fit gives up and keeps its last iterate. Newton-guarded fits converge in 5 to 60 steps
#: (benchmarks/bradley_terry.py, a chain of 100 models, two groups joined by 2 votes); only scores cut off
#: at the +-6000-point bound (prior ~0 on extreme data) run to the limit. MM alone (over 400 models) gets more.
_MAX_ITER = 200
_MAX_ITER_MM_ONLY = 5000
#: Above this many models with votes, a Newton step (an M x M solve per sample) costs more than it saves.
_NEWTON_MAX_MODELS = 400
#: Bootstrap samples drawn and fitted at once are capped so that their (samples x pairs x 3) counts stay
#: under 32 MB (all 200 samples of 100 models playing every pair at once).
_CHUNK_CELLS = 4_000_000

#: Serving: the least width a model counts with, in score points, so that a zero-width interval still draws.
MIN_WIDTH = 1.0
#: Serving: a model without votes counts this many times the widest interval of the others.
UNVOTED_WIDTH_FACTOR = 2.0

_OUTCOME_CODE = {"a": 0, "b": 1, "tie": 2, "both_bad": 2}


@dataclass(frozen=True)
class Vote:
    """One arena vote: ``a`` and ``b`` are the two (different) models' keys; ``outcome`` one of
    ``OUTCOMES`` ("a": a answered better, "b": b did, "tie" or "both_bad": counted as a tie)."""

    a: Hashable
    b: Hashable
    outcome: str


@dataclass(frozen=True)
class Ranking:
    """Bradley-Terry scores of a set of models, with bootstrap intervals (module docstring).

    ``scores``: model key -> score on the Elo-like scale (1000 + 400 log10 strength; the mean over the
    models with votes is 1000); a model without any vote has 1000. ``intervals``: model key -> the
    bootstrap percentile interval (low, high) of its score at ``confidence``; ``None`` for a model
    without any vote, and for every model when no bootstrap sample was drawn (``samples == 0``).
    ``votes_per_pair``: frozenset({a, b}) -> number of votes between the two (pairs that played only).
    ``n_votes``: votes counted; ``samples``: bootstrap samples drawn (0 when there was no vote);
    ``prior``: the pseudo-ties added per pair that played.
    """

    scores: dict[Hashable, float]
    intervals: dict[Hashable, tuple[float, float] | None]
    votes_per_pair: dict[frozenset, int]
    n_votes: int
    samples: int
    confidence: float = 0.95
    prior: float = DEFAULT_PRIOR

    def order(self) -> list[Hashable]:
        """Model keys, best score first; equal scores in the order of ``str(key)``."""
        return sorted(self.scores, key=lambda k: (-self.scores[k], str(k)))

    def rank_of(self, key: Hashable) -> int:
        """1 + the number of models with a strictly higher score (1 = best; equal scores share a rank).

        Raises:
            KeyError: if ``key`` is not a model of the ranking.
        """
        score = self.scores[key]
        return 1 + sum(1 for s in self.scores.values() if s > score)

    def votes_of(self, key: Hashable) -> int:
        """Number of votes involving ``key`` (0 for a model without votes or an unknown key)."""
        return sum(n for pair, n in self.votes_per_pair.items() if key in pair)

    def width(self, key: Hashable) -> float:
        """High minus low of ``key``'s interval, in score points; infinite when it has none."""
        interval = self.intervals.get(key)
        return math.inf if interval is None else interval[1] - interval[0]

    def rank_interval(self, key: Hashable) -> tuple[int, int]:
        """(best, worst) rank the intervals allow, as Chatbot Arena's "rank (UB)": best = 1 + the models
        whose interval lies wholly above ``key``'s, worst = the number of models minus those whose
        interval lies wholly below it. A model without an interval is unbounded: (1, number of models).

        Raises:
            KeyError: if ``key`` is not a model of the ranking.
        """
        low, high = self.intervals.get(key) or (-math.inf, math.inf)
        if key not in self.scores:
            raise KeyError(key)
        above = below = 0
        for other in self.scores:
            if other == key:
                continue
            o_low, o_high = self.intervals.get(other) or (-math.inf, math.inf)
            above += o_low > high
            below += o_high < low
        return 1 + above, len(self.scores) - below


@dataclass(frozen=True)
class _Tally:
    """Votes counted per pair. ``keys``: every model (``models`` first, then as met in the votes);
    ``fitted``: indices into ``keys`` of the models with votes; ``left``/``right``: each pair's two
    models as indices into ``fitted`` (left < right); ``counts``: (pairs, 3) left wins, right wins,
    ties; ``part``: the connected part of the comparison graph of each fitted model (0, 1, ...)."""

    keys: list
    fitted: np.ndarray
    left: np.ndarray
    right: np.ndarray
    counts: np.ndarray
    part: np.ndarray
    n_votes: int

    def votes_per_pair(self) -> dict[frozenset, int]:
        totals = self.counts.sum(axis=1)
        return {
            frozenset((self.keys[self.fitted[i]], self.keys[self.fitted[j]])): int(n)
            for i, j, n in zip(self.left.tolist(), self.right.tolist(), totals.tolist(), strict=True)
        }


def _tally(votes: Iterable, models: Sequence | None) -> _Tally:
    index: dict[Hashable, int] = {}
    for key in models or ():
        index.setdefault(key, len(index))
    ia, ib, oc = [], [], []
    for vote in votes:
        a, b, outcome = (vote.a, vote.b, vote.outcome) if isinstance(vote, Vote) else vote
        if outcome not in _OUTCOME_CODE:
            raise ValueError(f"unknown outcome {outcome!r}: expected one of {', '.join(OUTCOMES)}")
        if a == b:
            raise ValueError(f"a vote of model {a!r} against itself")
        ia.append(index.setdefault(a, len(index)))
        ib.append(index.setdefault(b, len(index)))
        oc.append(_OUTCOME_CODE[outcome])
    keys = list(index)
    n_votes = len(ia)
    if not n_votes:
        empty = np.zeros(0, dtype=np.int64)
        return _Tally(keys, empty, empty, empty, np.zeros((0, 3), dtype=np.int64), empty, 0)
    a = np.asarray(ia, dtype=np.int64)
    b = np.asarray(ib, dtype=np.int64)
    o = np.asarray(oc, dtype=np.int64)
    # Each pair once, smaller index on the left; a win of the right-hand model is outcome 1.
    left, right = np.minimum(a, b), np.maximum(a, b)
    o = np.where((a > b) & (o < 2), 1 - o, o)
    k = len(keys)
    cells, cell_counts = np.unique((left * k + right) * 3 + o, return_counts=True)
    pairs, pair_of_cell = np.unique(cells // 3, return_inverse=True)
    counts = np.zeros((len(pairs), 3), dtype=np.int64)
    counts[pair_of_cell, cells % 3] = cell_counts
    fitted = np.unique(np.concatenate([pairs // k, pairs % k]))
    left = np.searchsorted(fitted, pairs // k)
    right = np.searchsorted(fitted, pairs % k)
    return _Tally(keys, fitted, left, right, counts, _parts(len(fitted), left, right), n_votes)


def _parts(m: int, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Connected parts of the comparison graph (union-find), numbered 0, 1, ... in order of first model."""
    parent = list(range(m))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i, j in zip(left.tolist(), right.tolist(), strict=True):
        ri, rj = find(i), find(j)
        if ri != rj:
            parent[max(ri, rj)] = min(ri, rj)
    roots = np.array([find(x) for x in range(m)], dtype=np.int64)
    return np.unique(roots, return_inverse=True)[1]


def _solve_positive_definite(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """x with a[s] @ x[s] = b[s] for each s: ``a`` (S, M, M) symmetric positive definite, ``b`` (S, M, R).

    Gaussian elimination without pivoting (stable for a positive definite matrix; Golub & Van Loan,
    "Matrix Computations", 4.2), vectorised over S in plain numpy. Not numpy.linalg.solve: OpenBLAS's
    threads spin-wait when the cores are busy (a web server's workers), which made 20 solves of 100 x 100
    take 1.5 s instead of 5 ms. A pivot that is not positive (a matrix singular to rounding) yields nan,
    which the caller treats as "no Newton step".
    """
    a = a.astype(np.float64)  # a copy: eliminated in place
    b = b.astype(np.float64)
    m = a.shape[1]
    with np.errstate(all="ignore"):
        for k in range(m - 1):
            factor = a[:, k + 1 :, k] / a[:, k, k, None]
            a[:, k + 1 :, k + 1 :] -= factor[:, :, None] * a[:, None, k, k + 1 :]
            b[:, k + 1 :] -= factor[:, :, None] * b[:, None, k]
        x = np.empty_like(b)
        for k in range(m - 1, -1, -1):
            rest = np.einsum("sj,sjr->sr", a[:, k, k + 1 :], x[:, k + 1 :])
            x[:, k] = (b[:, k] - rest) / a[:, k, k, None]
        bad = ~(np.diagonal(a, axis1=1, axis2=2) > 0).all(axis=1)
    x[bad] = np.nan
    return x


class _Fitter:
    """Hunter's MM, with a Newton step taken instead whenever it gains more likelihood (module docstring,
    "Fit"), on a batch of count tables over the same pairs."""

    def __init__(self, tally: _Tally, prior: float, tol: float, max_iter: int | None = None):
        self.left, self.right = tally.left, tally.right
        self.m = len(tally.fitted)
        self.prior, self.tol = max(prior, _PRIOR_FLOOR), tol
        self.part = tally.part
        self.n_parts = int(tally.part.max()) + 1 if self.m else 0
        self.part_sizes = np.bincount(tally.part, minlength=self.n_parts)
        self.newton = self.m <= _NEWTON_MAX_MODELS
        self.max_iter = max_iter or (_MAX_ITER if self.newton else _MAX_ITER_MM_ONLY)
        # The Hessian is singular along each part's constant vector (strengths are defined up to a
        # factor per part); adding 1 1^T per part makes it invertible without changing the step, since
        # the gradient sums to 0 over each part.
        self.constants = (tally.part[:, None] == tally.part[None, :]).astype(float) if self.newton else None

    def _scatter(self, values: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """Sum of ``values`` (S, pairs) into each pair's model ``ends`` -> (S, models)."""
        s = values.shape[0]
        flat = (np.arange(s)[:, None] * self.m + ends[None, :]).ravel()
        return np.bincount(flat, weights=values.ravel(), minlength=s * self.m).reshape(s, self.m)

    def _settle(self, logp: np.ndarray) -> np.ndarray:
        # Strengths are defined up to a factor in each connected part: fix each part's geometric mean
        # at 1; the clips keep exp() finite for extreme data (a long chain of unanimous pairs, prior ~0).
        logp = np.clip(logp, -3 * _LOG_BOUND, 3 * _LOG_BOUND)
        s = logp.shape[0]
        flat = (np.arange(s)[:, None] * self.n_parts + self.part[None, :]).ravel()
        sums = np.bincount(flat, weights=logp.ravel(), minlength=s * self.n_parts).reshape(s, self.n_parts)
        means = sums / self.part_sizes
        return np.clip(logp - means[:, self.part], -_LOG_BOUND, _LOG_BOUND)

    def _log_likelihood(self, logp, wins, games) -> np.ndarray:
        """Per sample: sum_i W_i log p_i - sum_pairs N_ij log(p_i + p_j) (ties as half wins)."""
        p = np.exp(logp)  # finite: log-strengths are kept within 3 _LOG_BOUND (np.logaddexp is slower)
        pair_terms = games * np.log(p[:, self.left] + p[:, self.right])
        return np.sum(wins * logp, axis=1) - np.sum(pair_terms, axis=1)

    def curvatures(self, logp: np.ndarray, games: np.ndarray) -> np.ndarray:
        """Minus the log-likelihood's Hessian in log-strengths at each row of ``logp`` (S, models), plus
        the constants: the graph Laplacian with weights N_ij q_ij (1 - q_ij), q_ij = P(i beats j);
        shape (S, models, models)."""
        s, m, pairs = logp.shape[0], self.m, len(self.left)
        q = 1 / (1 + np.exp(logp[:, self.right] - logp[:, self.left]))
        weight = (games * q * (1 - q)).ravel()
        base = np.repeat(np.arange(s) * m * m, pairs)
        left, right = np.tile(self.left, s), np.tile(self.right, s)
        cells = np.concatenate(
            [base + left * (m + 1), base + right * (m + 1), base + left * m + right, base + right * m + left]
        )
        laplacian = np.bincount(
            cells, weights=np.concatenate([weight, weight, -weight, -weight]), minlength=s * m * m
        )
        return laplacian.reshape(s, m, m) + self.constants

    def _newton(self, logp, gradient, games) -> np.ndarray:
        """Newton's next point for each row, with each row's own Hessian (nan where it is singular)."""
        step = _solve_positive_definite(self.curvatures(logp, games), gradient[..., None])[..., 0]
        return self._settle(logp + step)

    def fit(self, counts: np.ndarray, start: np.ndarray, inverse_curvature: np.ndarray | None = None):
        """Log-strengths (S, models) from ``counts`` (S, pairs, 3), starting from ``start`` (S, models).

        Each row stops when it has converged. A single row takes Newton steps with its own Hessian. With
        ``inverse_curvature`` (models x models: the inverse of
        ``curvatures`` at the estimate; for bootstrap samples, which lie near the estimate), the Newton
        step first tried uses that fixed matrix for every row (the chord method: a matrix product
        instead of a solve), and a row's own Hessian is solved only where that step loses to MM's.
        """
        half_ties = counts[..., 2] / 2 + self.prior / 2
        wins = self._scatter(counts[..., 0] + half_ties, self.left) + self._scatter(
            counts[..., 1] + half_ties, self.right
        )
        games = counts.sum(axis=-1) + self.prior
        log_wins = np.log(wins)  # every fitted model has a pair, so at least prior / 2 > 0 wins
        logp = self._settle(start)
        active = np.arange(len(logp))  # rows not yet converged
        reached = np.full(len(logp), -np.inf)  # log-likelihood of each row's current point
        # A batch without the fixed matrix (singular at the estimate: scores at the bound) gets MM alone.
        newton = self.newton and (inverse_curvature is not None or len(logp) == 1)
        for _ in range(self.max_iter):
            if not active.size:
                break
            old, w, g = logp[active], wins[active], games[active]
            # Hunter's MM: p_i <- W_i / sum_j N_ij / (p_i + p_j).
            p = np.exp(old)
            per_pair = g / (p[:, self.left] + p[:, self.right])
            denominator = self._scatter(per_pair, self.left) + self._scatter(per_pair, self.right)
            new = self._settle(log_wins[active] - np.log(denominator))
            if newton:
                # MM crawls where the comparison graph is thinly linked (a chain, two groups joined by
                # a few votes). A Newton step (gradient: wins minus expected wins) is taken instead
                # whenever it gains more likelihood, so every step gains at least what MM's would.
                expected = per_pair * p[:, self.left]
                gradient = w - self._scatter(expected, self.left) - self._scatter(g - expected, self.right)
                with np.errstate(all="ignore"):
                    ll_mm = self._log_likelihood(new, w, g)
                    if inverse_curvature is None:
                        stepped = self._newton(old, gradient, g)
                    else:
                        stepped = self._settle(old + np.einsum("sm,mn->sn", gradient, inverse_curvature))
                    ll_newton = self._log_likelihood(stepped, w, g)
                    # Rows at the +-6000-point bound (prior ~0, extreme data) never converge: not worth a solve.
                    lost = ~(ll_newton >= ll_mm) & (np.abs(old) < _LOG_BOUND).all(axis=1)
                    if inverse_curvature is not None and lost.any():
                        lost = np.flatnonzero(lost)
                        stepped[lost] = self._newton(old[lost], gradient[lost], g[lost])
                        ll_newton[lost] = self._log_likelihood(stepped[lost], w[lost], g[lost])
                    better = ll_newton >= ll_mm  # False where the Newton step is nan
                new = np.where(better[:, None], stepped, new)
                # A row that neither step improves is done, however far it moved: at the maximum to
                # rounding, or where the +-6000-point bound cuts off an infinite estimate (prior ~0).
                best = np.where(better, ll_newton, ll_mm)
                stuck = best <= reached[active]
                reached[active] = best
            else:
                stuck = np.zeros(len(active), dtype=bool)
            moved = np.max(np.abs(new - old), axis=1) if self.m else np.zeros(len(active))
            logp[active] = new
            active = active[(moved >= self.tol) & ~stuck]
        return logp


def _check_prior(prior: float) -> None:
    if not (prior >= 0 and math.isfinite(prior)):
        raise ValueError(f"prior must be a finite number of pseudo-ties, 0 or more, not {prior}")


def fit_bradley_terry(
    votes: Sequence[Vote],
    *,
    models: Sequence | None = None,
    prior: float = DEFAULT_PRIOR,
    tol: float = _TOL,
    max_iter: int | None = None,
) -> dict[Hashable, float]:
    """Bradley-Terry maximum-likelihood scores, with ``prior`` pseudo-ties per pair that played.

    Returns model key -> score on the Elo-like scale (1000 + 400 log10 strength, the models with votes
    averaging 1000; strength = 10 ** ((score - 1000) / 400)), for every model met in ``votes`` and every
    model of ``models`` (1000 for one without votes). ``votes``: ``Vote`` objects or (a, b, outcome)
    tuples. Module docstring for the model, the MM algorithm, ties and the prior.

    Raises:
        ValueError: on an outcome not in ``OUTCOMES``, a vote of a model against itself, or a negative
            or infinite ``prior``.
    """
    _check_prior(prior)
    tally = _tally(votes, models)
    scores = dict.fromkeys(tally.keys, BASE_SCORE)
    if tally.n_votes:
        fitter = _Fitter(tally, prior, tol, max_iter)
        logp = fitter.fit(tally.counts[None].astype(np.float64), np.zeros((1, fitter.m)))[0]
        for i, value in zip(tally.fitted.tolist(), logp.tolist(), strict=True):
            scores[tally.keys[i]] = BASE_SCORE + _POINTS * value
    return scores


def rank(
    votes: Sequence[Vote],
    *,
    models: Sequence | None = None,
    samples: int = 200,
    seed: int = 0,
    confidence: float = 0.95,
    prior: float = DEFAULT_PRIOR,
) -> Ranking:
    """Bradley-Terry scores (``fit_bradley_terry``) with bootstrap percentile intervals over votes from
    ``samples`` resamples seeded by ``seed`` (same votes and seed, same intervals), and the votes per pair.

    100 models and 100,000 votes with 200 samples take 2 to 3 s on 2 busy cores (benchmarks/bradley_terry.py).

    Raises:
        ValueError: as ``fit_bradley_terry``, and when ``samples`` is negative or ``confidence`` is not
            strictly between 0 and 1.
    """
    _check_prior(prior)
    if samples < 0:
        raise ValueError(f"samples must be 0 or more, not {samples}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be strictly between 0 and 1, not {confidence}")
    tally = _tally(votes, models)
    scores = dict.fromkeys(tally.keys, BASE_SCORE)
    intervals: dict[Hashable, tuple[float, float] | None] = dict.fromkeys(tally.keys)
    if not tally.n_votes:
        return Ranking(scores, intervals, {}, 0, 0, confidence, prior)
    fitter = _Fitter(tally, prior, _TOL)
    estimate = fitter.fit(tally.counts[None].astype(np.float64), np.zeros((1, fitter.m)))
    fitted_keys = [tally.keys[i] for i in tally.fitted.tolist()]
    for key, value in zip(fitted_keys, estimate[0].tolist(), strict=True):
        scores[key] = BASE_SCORE + _POINTS * value
    if samples:
        rng = np.random.default_rng(seed)
        shares = tally.counts.ravel() / tally.n_votes
        inverse = None
        if fitter.newton:
            games = tally.counts.sum(axis=1) + fitter.prior
            inverse = _solve_positive_definite(
                fitter.curvatures(estimate, games[None]), np.eye(fitter.m)[None]
            )[0]
            if not np.all(np.isfinite(inverse)):  # numerically singular (scores at the bound): MM alone
                inverse = None
        chunk = max(1, _CHUNK_CELLS // shares.size)
        boot = []
        for first in range(0, samples, chunk):
            size = min(chunk, samples - first)
            draws = rng.multinomial(tally.n_votes, shares, size=size).reshape(size, *tally.counts.shape)
            boot.append(fitter.fit(draws.astype(np.float64), np.repeat(estimate, size, axis=0), inverse))
        boot = np.concatenate(boot)
        tail = (1 - confidence) / 2
        lows, highs = BASE_SCORE + _POINTS * np.quantile(boot, [tail, 1 - tail], axis=0)
        for key, low, high in zip(fitted_keys, lows.tolist(), highs.tolist(), strict=True):
            intervals[key] = (min(low, scores[key]), max(high, scores[key]))
    return Ranking(
        scores=scores,
        intervals=intervals,
        votes_per_pair=tally.votes_per_pair(),
        n_votes=tally.n_votes,
        samples=samples,
        confidence=confidence,
        prior=prior,
    )


def pair_weights(ranking: Ranking, models: Sequence[Hashable]) -> dict[tuple[Hashable, Hashable], float]:
    """The draw weight of every pair of ``models`` (module docstring, "Serving"), unnormalised:
    ``{(i, j): (w_i + w_j) / (1 + n_ij)}`` with i before j in the order of ``models`` (repeats dropped).

    w is a model's interval width in score points (``Ranking.width``), at least ``MIN_WIDTH``; a model
    without an interval (no votes, or unknown to ``ranking``) counts ``UNVOTED_WIDTH_FACTOR`` times the
    widest interval of the others; when no model has an interval every w is 1 (a uniform draw).
    n_ij is the votes between i and j (``Ranking.votes_per_pair``).

    Raises:
        ValueError: if ``models`` holds fewer than two different models.
    """
    candidates = list(dict.fromkeys(models))
    if len(candidates) < 2:
        raise ValueError("the arena needs at least two different models")
    widths = {key: ranking.width(key) for key in candidates}
    finite = [width for width in widths.values() if math.isfinite(width)]
    if finite:
        unvoted = UNVOTED_WIDTH_FACTOR * max(max(finite), MIN_WIDTH)
        w = {key: max(width, MIN_WIDTH) if math.isfinite(width) else unvoted for key, width in widths.items()}
    else:
        w = dict.fromkeys(candidates, 1.0)
    weights = {}
    for x, i in enumerate(candidates):
        for j in candidates[x + 1 :]:
            n = ranking.votes_per_pair.get(frozenset((i, j)), 0)
            weights[(i, j)] = (w[i] + w[j]) / (1 + n)
    return weights


def pair_probabilities(
    ranking: Ranking, models: Sequence[Hashable]
) -> dict[tuple[Hashable, Hashable], float]:
    """``pair_weights`` divided by their sum: the probability ``draw_pair`` serves each pair.

    Raises:
        ValueError: as ``pair_weights``.
    """
    weights = pair_weights(ranking, models)
    total = math.fsum(weights.values())
    return {pair: weight / total for pair, weight in weights.items()}


def draw_pair(
    ranking: Ranking, models: Sequence[Hashable], *, rng: random.Random | None = None
) -> tuple[Hashable, Hashable]:
    """A pair of different ``models`` drawn at random with the probabilities of ``pair_probabilities``
    (module docstring, "Serving"): wide intervals and rarely played pairs are served more often, and
    every pair can be served.

    ``rng``: a ``random.Random``; by default ``secrets.SystemRandom()`` (the operating system's
    cryptographic source), so that the next pair cannot be worked out from the public ranking or from
    earlier battles. Tests pass a seeded ``random.Random``: the same seed, the same pairs. The pair comes
    in the order of ``models``; the caller draws which one is shown as A.

    Raises:
        ValueError: if ``models`` holds fewer than two different models.
    """
    weights = pair_weights(ranking, models)
    rng = rng if rng is not None else secrets.SystemRandom()
    pairs = list(weights)
    point = rng.random() * math.fsum(weights.values())
    running = 0.0
    for pair in pairs:
        running += weights[pair]
        if point < running:
            return pair
    return pairs[-1]  # float rounding left point at the very top of the sum
