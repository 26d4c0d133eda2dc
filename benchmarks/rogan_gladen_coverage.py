"""Coverage of the judge-corrected failure rate's interval (``core.rogan_gladen``) on simulated judges of
known sensitivity and specificity.

Run:  .venv/bin/python benchmarks/rogan_gladen_coverage.py [--runs 1000] [--seed 11]

Each run: ``m`` validation items and ``n`` outputs people never judged, each a failure with the true rate
r; a judge says "failed" of a failure with probability Se and of a good output with probability 1 - Sp.
People's verdicts on the validation items are the truth. The Rogan-Gladen estimate and its 95% bootstrap
interval (2,000 resamples of both the validation items and the outputs) are computed from the judge's
verdicts, and the run counts whether the interval holds r. Prints, per setting, the coverage (aim: at
least 93%) with its binomial interval, the mean width, the mean absolute error of the corrected and of the
raw rate, and the runs refused (fewer than 20 validation items, or Se + Sp <= 1 measured).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.intervals import wilson_interval  # noqa: E402
from core.rogan_gladen import corrected_rate  # noqa: E402

#: (true rate, Se, Sp, validation items, outputs)
SETTINGS = [
    (0.20, 0.70, 0.90, 100, 500),
    (0.20, 0.70, 0.90, 40, 500),
    (0.30, 0.80, 0.85, 200, 1000),
    (0.10, 0.90, 0.95, 100, 500),
    (0.05, 0.85, 0.90, 100, 500),
]


def run(rate, se, sp, m, n, runs, seed) -> dict:
    rng = np.random.default_rng(seed)
    held = refused = 0
    widths, errors, raw_errors = [], [], []
    for r in range(runs):
        truth_val = rng.random(m) < rate
        judge_val = np.where(truth_val, rng.random(m) < se, rng.random(m) >= sp)
        truth_out = rng.random(n) < rate
        judge_out = np.where(truth_out, rng.random(n) < se, rng.random(n) >= sp)
        got = corrected_rate(judge_val.tolist(), truth_val.tolist(), judge_out.tolist(), seed=r)
        if got.refused:
            refused += 1
            continue
        low, high = got.interval
        held += low <= rate <= high
        widths.append(high - low)
        errors.append(abs(got.corrected - rate))
        raw_errors.append(abs(got.observed - rate))
    done = runs - refused
    return {
        "coverage": held / done if done else float("nan"),
        "coverage_interval": wilson_interval(held, done) if done else (float("nan"),) * 2,
        "width": float(np.mean(widths)) if widths else float("nan"),
        "error": float(np.mean(errors)) if errors else float("nan"),
        "raw_error": float(np.mean(raw_errors)) if raw_errors else float("nan"),
        "refused": refused,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    print(f"{args.runs} simulated runs per line; 95% intervals")
    print("| true rate | Se | Sp | validation items | outputs | coverage | mean width | "
          "mean error, corrected | mean error, raw | refused |")  # fmt: skip
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    started = time.perf_counter()
    for rate, se, sp, m, n in SETTINGS:
        got = run(rate, se, sp, m, n, args.runs, args.seed)
        low, high = got["coverage_interval"]
        print(f"| {rate} | {se} | {sp} | {m} | {n} | {got['coverage']:.1%} ({low:.1%}-{high:.1%}) | "
              f"{got['width']:.3f} | {got['error']:.3f} | {got['raw_error']:.3f} | {got['refused']} |")  # fmt: skip
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
