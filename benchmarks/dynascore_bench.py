"""Dynascore for 200 models on 10 scoring datasets; the aim is under 100 ms: the leaderboard computes
it on every request, with the viewer's weights.

Run:  .venv/bin/python benchmarks/dynascore_bench.py [--models 200] [--datasets 10] [--repeats 50] [--seed 0]

Values are random but seeded: perf, fairness and robustness uniform in [0, 1], throughput uniform in
[10, 2000] examples/s, memory uniform in [0.1, 12] GiB; one model in ten lacks one dataset's score
(incomplete, as on a real leaderboard). Dataset weights uniform in [0.5, 5]; metric weights the
defaults of docs/domain.md, "Dynascore" (perf 4, others 1). ``leaderboards.dynascore.compute_dynascore``
(pure Python, no database) is timed ``--repeats`` times after one warm-up call; the median, best and
worst are printed in ms.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from leaderboards.dynascore import DEFAULT_METRIC_WEIGHTS, compute_dynascore  # noqa: E402


def make_scores(n_models: int, n_datasets: int, seed: int):
    """Seeded random ``{model: {dataset: {metric: value}}}`` and dataset weights."""
    rng = random.Random(seed)
    datasets = [f"dataset-{i}" for i in range(n_datasets)]
    scores = {}
    for m in range(n_models):
        per_dataset = {}
        for d in datasets:
            per_dataset[d] = {
                "perf": rng.random(),
                "throughput": rng.uniform(10, 2000),
                "memory": rng.uniform(0.1, 12),
                "fairness": rng.random(),
                "robustness": rng.random(),
            }
        if m % 10 == 9:
            del per_dataset[rng.choice(datasets)]
        scores[f"model-{m}"] = per_dataset
    weights = {d: rng.uniform(0.5, 5) for d in datasets}
    return scores, weights


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=200)
    parser.add_argument("--datasets", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    scores, weights = make_scores(args.models, args.datasets, args.seed)
    compute_dynascore(scores, dataset_weights=weights, metric_weights=DEFAULT_METRIC_WEIGHTS)  # warm-up
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        result = compute_dynascore(scores, dataset_weights=weights, metric_weights=DEFAULT_METRIC_WEIGHTS)
        times.append((time.perf_counter() - start) * 1000)
    incomplete = sum(not r.complete for r in result.models)
    print(
        f"Dynascore, {args.models} models x {args.datasets} datasets x 5 metrics "
        f"({incomplete} incomplete), {args.repeats} repeats:"
    )
    print(
        f"  median {statistics.median(times):.2f} ms, best {min(times):.2f} ms, worst {max(times):.2f} ms "
        "(aim: under 100 ms)"
    )
    print(
        "  AMRS: "
        + ", ".join(f"{j} {v:.4g}" if v is not None else f"{j} undefined" for j, v in result.amrs.items())
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
