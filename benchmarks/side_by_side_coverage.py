"""Coverage of the side-by-side mean rating's interval across writers
(``core.clustered.clustered_ratio_interval``, as ``annotation.red_team.ratings.model_ratings`` uses it),
on simulated side-by-side rounds.

Run:  .venv/bin/python benchmarks/side_by_side_coverage.py [--rounds 400] [--seed 11]

Each simulated round (docs/generative.md, "Several models in one conversation"):
  * ``--people`` writers; writer i holds n_i side-by-side conversations, n_i = 1 + a negative binomial
    draw (mean ``--mean-conversations``, dispersion 1: a few people write most of the round);
  * each conversation shows the model under study (its answers' true mean rating ``--mean``);
  * a rating is ``mean + writer effect + noise``, the writer's effect normal (sd ``--writer-sd``: a
    harsh or generous rater), the noise normal (sd ``--noise-sd``), rounded and kept in 1-100 (the
    slider), so the true mean is computed from the same clipped distribution by a large draw.
Prints, per setting, the share of rounds whose 95% interval holds the true mean (the aim: 93-97%), the
binomial interval of that share, the rounds with no interval (fewer than 5 writers), the mean width, and
the naive interval's coverage (mean +- 1.96 sd / sqrt(ratings), every rating independent) beside it.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.clustered import clustered_ratio_interval  # noqa: E402
from core.intervals import wilson_interval  # noqa: E402


def _ratings(rng, mean: float, writer_sd: float, noise_sd: float, effects: np.ndarray, counts: np.ndarray):
    per_rating = np.repeat(effects, counts)
    raw = mean + per_rating + rng.normal(0, noise_sd, per_rating.size)
    return np.clip(np.rint(raw), 1, 100)


def true_mean(mean: float, writer_sd: float, noise_sd: float, seed: int) -> float:
    """The mean of one rating by a random writer, clipped to 1-100, by a draw of 2,000,000."""
    rng = np.random.default_rng(seed)
    raw = mean + rng.normal(0, writer_sd, 2_000_000) + rng.normal(0, noise_sd, 2_000_000)
    return float(np.clip(np.rint(raw), 1, 100).mean())


def simulate(
    rounds: int, people: int, mean_n: float, mean: float, writer_sd: float, noise_sd: float, seed: int
) -> dict:
    """Coverage, no-interval rounds and widths over ``rounds`` rounds. The estimand is the mean rating
    over ratings (every rating weighs the same); with n_i drawn independently of the writer's effect, it
    is the mean of one rating by a random writer."""
    truth = true_mean(mean, writer_sd, noise_sd, seed + 1)
    rng = np.random.default_rng(seed)
    hits = naive_hits = none = 0
    widths = []
    for _ in range(rounds):
        counts = 1 + rng.negative_binomial(1, 1 / mean_n, people)
        effects = rng.normal(0, writer_sd, people)
        ratings = _ratings(rng, mean, writer_sd, noise_sd, effects, counts)
        owners = np.repeat(np.arange(people), counts)
        sums = np.bincount(owners, weights=ratings, minlength=people)
        interval = clustered_ratio_interval(sums, counts.astype(float))
        if interval is None:
            none += 1
            continue
        hits += interval[0] <= truth <= interval[1]
        widths.append(interval[1] - interval[0])
        half = 1.96 * ratings.std(ddof=1) / np.sqrt(ratings.size)
        naive_hits += abs(ratings.mean() - truth) <= half
    measured = rounds - none
    low, high = wilson_interval(hits, measured) if measured else (float("nan"), float("nan"))
    return {
        "truth": truth,
        "coverage": hits / measured if measured else float("nan"),
        "coverage_interval": (low, high),
        "naive": naive_hits / measured if measured else float("nan"),
        "none": none,
        "width": float(np.mean(widths)) if widths else float("nan"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=400)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    settings = [
        # (writers, mean conversations each, true mean, writer sd, noise sd)
        (10, 3, 60, 15, 15),
        (30, 3, 60, 15, 15),
        (30, 3, 85, 15, 15),
        (100, 2, 60, 15, 15),
        (30, 3, 60, 0, 20),
    ]
    print(f"{args.rounds} simulated rounds per row; 95% intervals; aim 93-97%")
    print(
        "writers  conv/writer  mean  writer sd  noise sd | true mean  clustered coverage [95% CI]   none  width | naive"
    )
    for people, n, mean, writer_sd, noise_sd in settings:
        started = time.perf_counter()
        out = simulate(args.rounds, people, n, mean, writer_sd, noise_sd, args.seed)
        low, high = out["coverage_interval"]
        print(
            f"{people:7d}  {n:11d}  {mean:4d}  {writer_sd:9d}  {noise_sd:8d} | {out['truth']:9.2f}  "
            f"{out['coverage']:7.1%} [{low:.1%}, {high:.1%}]  {out['none']:5d}  {out['width']:5.1f} | "
            f"{out['naive']:.1%}   ({time.perf_counter() - started:.1f} s)"
        )


if __name__ == "__main__":
    main()
