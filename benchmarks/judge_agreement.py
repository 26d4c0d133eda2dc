"""A judge's agreement with people on 10,000 items with 1,000 bootstrap samples; the aim is under 1 s
(issue 32).

Run:  .venv/bin/python benchmarks/judge_agreement.py [--items 10000] [--samples 1000] [--labels 3]
      [--accuracy 0.8] [--repeats 5] [--seed 0]

Seeded simulated verdicts: people's labels uniform over ``--labels`` rubric answers; the judge gives the
people's label with probability ``--accuracy`` and a uniform label otherwise, so the expected raw agreement
is a + (1 - a) / k and the expected kappa is a (p_e = 1 / k). ``core.agreement.agreement`` (coding the
labels, the table, the paired bootstrap) is timed ``--repeats`` times; the median and worst are printed
with the figures of the last run. For comparison, the same bootstrap by resampling item indices (a
(samples x items) index array, what the multinomial draw of the table's cells replaces) is timed once.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.agreement import agreement  # noqa: E402


def simulate(n_items: int, n_labels: int, accuracy: float, seed: int) -> tuple[list[str], list[str]]:
    """(judge, people) label lists, seeded."""
    rng = np.random.default_rng(seed)
    labels = np.array([f"answer-{i}" for i in range(n_labels)])
    people = rng.integers(0, n_labels, n_items)
    judge = np.where(rng.random(n_items) < accuracy, people, rng.integers(0, n_labels, n_items))
    return labels[judge].tolist(), labels[people].tolist()


def index_bootstrap_seconds(judge: list[str], people: list[str], samples: int, seed: int) -> float:
    """Seconds for the same percentile bootstrap by resampling item indices (for comparison)."""
    start = time.perf_counter()
    codes = {label: i for i, label in enumerate(sorted(set(judge) | set(people)))}
    j = np.array([codes[x] for x in judge])
    p = np.array([codes[x] for x in people])
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(j), (samples, len(j)))
    ji, pi = j[idx], p[idx]
    p_o = np.mean(ji == pi, axis=1)
    p_e = sum(np.mean(ji == k, axis=1) * np.mean(pi == k, axis=1) for k in range(len(codes)))
    np.quantile((p_o - p_e) / (1 - p_e), [0.025, 0.975])
    return time.perf_counter() - start


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--labels", type=int, default=3)
    parser.add_argument("--accuracy", type=float, default=0.8)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    judge, people = simulate(args.items, args.labels, args.accuracy, args.seed)
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        result = agreement(judge, people, samples=args.samples, seed=args.seed)
        times.append(time.perf_counter() - start)
    k = args.labels
    print(
        f"Judge agreement, {result.n:,} items, {k} labels, {args.samples} bootstrap samples, "
        f"{args.repeats} repeats:"
    )
    print(
        f"  median {statistics.median(times) * 1000:.1f} ms, worst {max(times) * 1000:.1f} ms (aim: under 1 s); "
        f"resampling item indices instead: {index_bootstrap_seconds(judge, people, args.samples, args.seed):.2f} s"
    )
    print(
        f"  kappa {result.kappa:.4f} (expected {args.accuracy:g}), 95% interval "
        f"[{result.kappa_interval[0]:.4f}, {result.kappa_interval[1]:.4f}]; raw agreement {result.raw:.4f} "
        f"(expected {args.accuracy + (1 - args.accuracy) / k:.4f}), "
        f"[{result.raw_interval[0]:.4f}, {result.raw_interval[1]:.4f}]"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
