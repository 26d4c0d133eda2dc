"""Coverage of the ECE's bootstrap interval (``core.calibration``) on simulated held-out sets.

Run:  .venv/bin/python benchmarks/ece_coverage.py [--reps 400] [--samples 1000] [--seed 3]

A simulated classifier (docs/measurements.md, "Calibration"): each item's top-label confidence is
``c = 0.5 + 0.5 * u`` with ``u ~ Beta(2, 1)`` (most items confident, as a trained classifier's), and the
top label is right with probability ``g(c)``:
  * calibrated:     g(c) = c;
  * overconfident:  g(c) = 0.5 + 0.6 (c - 0.5), the gap growing with the confidence;
  * underconfident: g(c) = min(1, c + 0.08).
The true ECE of each model is the population value of the binned ECE (15 bins), computed on 4 million
draws. For each setting and held-out size n, ``--reps`` held-out sets are drawn and the share whose 95%
interval holds the true ECE is printed (aim: 93-97%), with its binomial interval and the mean width, for
the basic bootstrap the platform uses and the percentile bootstrap beside it.

Then the paired difference (``core.calibration.paired_difference``): two models answer the same items,
each with its own confidence and correctness drawn as above (independently given the item), and the
share of held-out sets whose interval holds the true difference of their ECEs is printed.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.calibration import _ece_of_weights, _multiplicities, bin_index  # noqa: E402
from core.intervals import wilson_interval  # noqa: E402

BINS = 15
SETTINGS = {
    "calibrated": lambda c: c,
    "overconfident": lambda c: 0.5 + 0.6 * (c - 0.5),
    "underconfident": lambda c: np.minimum(1.0, c + 0.08),
}


def draw(rng, n: int, g) -> tuple[np.ndarray, np.ndarray]:
    c = 0.5 + 0.5 * rng.beta(2, 1, size=n)
    return c, (rng.random(n) < g(c)).astype(float)


def population_ece(g, rng) -> float:
    """The binned ECE of the population: per bin, |E[g(c)] - E[c]| weighted by the bin's mass."""
    c = 0.5 + 0.5 * rng.beta(2, 1, size=4_000_000)
    index = bin_index(c, BINS)
    gap = np.bincount(index, weights=g(c) - c, minlength=BINS)
    return float(np.abs(gap).sum() / len(c))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=400)
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--sizes", default="400,2000")
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    print(
        f"{'setting':<15} {'n':>5} {'true ECE':>9}  {'basic: coverage [95% CI], width':<40} percentile: coverage, width"
    )
    for name, g in SETTINGS.items():
        truth = population_ece(g, rng)
        for n in (int(s) for s in args.sizes.split(",")):
            hits = {"basic": 0, "percentile": 0}
            widths = {"basic": [], "percentile": []}
            for rep in range(args.reps):
                c, y = draw(rng, n, g)
                index = bin_index(c, BINS)
                estimate = float(_ece_of_weights(c, y, index, np.ones((1, n)), BINS)[0])
                boot = _ece_of_weights(c, y, index, _multiplicities(n, args.samples, rep), BINS)
                lo_q, hi_q = np.quantile(boot, [0.025, 0.975])
                intervals = {
                    "basic": (max(0.0, 2 * estimate - hi_q), 2 * estimate - lo_q),
                    "percentile": (lo_q, hi_q),
                }
                for way, (low, high) in intervals.items():
                    hits[way] += low <= truth <= high
                    widths[way].append(high - low)
            cells = []
            for way in ("basic", "percentile"):
                low, high = wilson_interval(hits[way], args.reps)
                cells.append(
                    f"{hits[way] / args.reps:6.1%} [{low:.1%}, {high:.1%}], {np.mean(widths[way]):.3f}"
                )
            print(f"{name:<15} {n:>5} {truth:9.4f}  {cells[0]:<40} {cells[1]}")
    print()
    print(f"{'before -> after':<32} {'n':>5} {'true diff':>9}  basic paired: coverage [95% CI], width")
    truths = {name: population_ece(g, rng) for name, g in SETTINGS.items()}
    pairs = (
        ("calibrated", "overconfident"),
        ("underconfident", "overconfident"),
        ("overconfident", "overconfident"),
    )
    for before, after in pairs:
        truth = truths[after] - truths[before]
        for n in (int(s) for s in args.sizes.split(",")):
            hits, widths = 0, []
            for rep in range(args.reps):
                c0, y0 = draw(rng, n, SETTINGS[before])
                c1, y1 = draw(rng, n, SETTINGS[after])
                weights, ones = _multiplicities(n, args.samples, rep), np.ones((1, n))
                i0, i1 = bin_index(c0, BINS), bin_index(c1, BINS)
                estimate = float(
                    _ece_of_weights(c1, y1, i1, ones, BINS)[0] - _ece_of_weights(c0, y0, i0, ones, BINS)[0]
                )
                boot = _ece_of_weights(c1, y1, i1, weights, BINS) - _ece_of_weights(c0, y0, i0, weights, BINS)
                lo_q, hi_q = np.quantile(boot, [0.025, 0.975])
                low, high = 2 * estimate - hi_q, 2 * estimate - lo_q
                hits += low <= truth <= high
                widths.append(high - low)
            lo, hi = wilson_interval(hits, args.reps)
            cell = f"{hits / args.reps:6.1%} [{lo:.1%}, {hi:.1%}], {np.mean(widths):.3f}"
            print(f"{before + ' -> ' + after:<32} {n:>5} {truth:+9.4f}  {cell}")
    print(
        f"({args.reps} held-out sets per row, {args.samples} resamples each; {time.perf_counter() - started:.0f} s)"
    )


if __name__ == "__main__":
    main()
