"""Bradley-Terry ranking of 100 models from 100,000 simulated arena votes with 200 bootstrap samples;
the aim is under 10 s on 2 cores (issue 32).

Run:  .venv/bin/python benchmarks/bradley_terry.py [--models 100] [--votes 100000] [--samples 200]
      [--spread 100] [--tie-rate 0] [--prior 1] [--seed 0]

True scores are drawn from a normal distribution (mean 1000, sd ``--spread`` points on the Elo-like
scale: strength = 10 ** ((score - 1000) / 400)); each vote picks two different models uniformly at
random and draws the winner with Bradley-Terry's P(a beats b) = p_a / (p_a + p_b); a share
``--tie-rate`` of votes is made a tie or "both bad" instead (ties are outside the Bradley-Terry model and
pull the fitted scores toward each other). ``core.pairwise.rank`` (counting the ``Vote`` objects, the
fit and the bootstrap) is timed once; then the fitted scores are compared with the true ones (centred
the same way, mean 1000): Spearman's and Kendall's rank correlations (computed here with numpy:
Spearman is Pearson's r of the ranks, Kendall's tau-a the mean sign agreement over all pairs), the
mean absolute error in points, the mean interval width, and the share of true scores inside their
model's interval (coverage; the intervals are 95% ones).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.pairwise import DEFAULT_PRIOR, Vote, draw_pair, rank  # noqa: E402


def simulate(n_models: int, n_votes: int, spread: float, tie_rate: float, seed: int):
    """True scores (array, mean exactly 1000) and the seeded list of ``Vote`` objects."""
    rng = np.random.default_rng(seed)
    true = rng.normal(1000, spread, n_models)
    true += 1000 - true.mean()
    strength = 10 ** ((true - 1000) / 400)
    a = rng.integers(0, n_models, n_votes)
    b = (a + rng.integers(1, n_models, n_votes)) % n_models  # never a model against itself
    a_wins = rng.random(n_votes) < strength[a] / (strength[a] + strength[b])
    tie = rng.random(n_votes) < tie_rate
    both_bad = rng.random(n_votes) < 0.5
    outcome = np.where(tie, np.where(both_bad, "both_bad", "tie"), np.where(a_wins, "a", "b"))
    votes = [Vote(x, y, o) for x, y, o in zip(a.tolist(), b.tolist(), outcome.tolist(), strict=True)]
    return true, votes


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson's r of the ranks (no equal values in continuous scores)."""
    return float(np.corrcoef(np.argsort(np.argsort(x)), np.argsort(np.argsort(y)))[0, 1])


def kendall(x: np.ndarray, y: np.ndarray) -> float:
    """Kendall's tau-a: mean of sign(x_i - x_j) sign(y_i - y_j) over the pairs i < j."""
    agree = np.sign(x[:, None] - x[None, :]) * np.sign(y[:, None] - y[None, :])
    n = len(x)
    return float(agree[np.triu_indices(n, 1)].sum() / (n * (n - 1) / 2))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=100)
    parser.add_argument("--votes", type=int, default=100_000)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--spread", type=float, default=100.0)
    parser.add_argument("--tie-rate", type=float, default=0.0)
    parser.add_argument("--prior", type=float, default=DEFAULT_PRIOR)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    true, votes = simulate(args.models, args.votes, args.spread, args.tie_rate, args.seed)
    start = time.perf_counter()
    ranking = rank(votes, models=range(args.models), samples=args.samples, seed=args.seed, prior=args.prior)
    seconds = time.perf_counter() - start
    start = time.perf_counter()
    pair = draw_pair(ranking, range(args.models), rng=random.Random(args.seed))
    pair_ms = (time.perf_counter() - start) * 1000

    fitted = np.array([ranking.scores[m] for m in range(args.models)])
    lows = np.array([ranking.intervals[m][0] for m in range(args.models)])
    highs = np.array([ranking.intervals[m][1] for m in range(args.models)])
    covered = np.mean((lows <= true) & (true <= highs))
    print(
        f"Bradley-Terry, {args.models} models, {ranking.n_votes:,} votes "
        f"({len(ranking.votes_per_pair):,} pairs, tie rate {args.tie_rate:g}), "
        f"{ranking.samples} bootstrap samples, prior {ranking.prior:g} pseudo-tie per pair:"
    )
    print(f"  {seconds:.2f} s (aim: under 10 s), draw_pair {pair_ms:.1f} ms -> {pair}")
    print(
        f"  against the true scores (sd {args.spread:g}): Spearman {spearman(fitted, true):.4f}, "
        f"Kendall {kendall(fitted, true):.4f}, mean |error| {np.mean(np.abs(fitted - true)):.1f} points"
    )
    print(
        f"  95% intervals: mean width {np.mean(highs - lows):.1f} points, "
        f"true score inside for {covered:.0%} of the models"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
