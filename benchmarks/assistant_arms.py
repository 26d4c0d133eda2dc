"""The annotation-assistant study on simulated rounds: is the arm assignment balanced, do the per-arm
intervals cover a known effect, and how often does the test between arms find it (and how often a
difference that is not there)?

Run:  .venv/bin/python benchmarks/assistant_arms.py [--rounds 400] [--people 40] [--seed 5]

Each simulated round (docs/domain.md, "Annotation assistants"):
  * ``--people`` people join in turn and take their arms from ``annotation.assistant.arms.arm_at`` (the
    platform's permuted blocks; a fresh secret key per round), with shares none 1 : assistant 1;
  * person i writes n_i = 1 + Poisson(11) examples, each taking them t_i minutes, t_i ~ Gamma(shape 4)
    of mean 3 minutes without the assistant and 2.4 with it: the true examples per hour are 20 and 25;
  * each of their examples fools the target with their own probability p_i ~ Beta of mean 0.25 without
    and 0.35 with the assistant (concentration 6: people differ), and validators confirm a fooling one
    with probability 0.8: the true MER is 0.25 and 0.35, the true validated MER 0.20 and 0.28.
Prints the arms' sizes (the largest gap from an even split, against simple randomisation's), the coverage
of the 95% intervals of examples per hour and MER per arm (aim: 93-97%), and the share of rounds whose
permutation test between the arms gives p < 0.05: with the effect above (power) and with none (size,
aim about 5%).
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dynabench.settings")
os.environ.setdefault("DEBUG", "1")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402

from annotation.assistant.arms import Arm, arm_at  # noqa: E402
from core.arm_comparison import permutation_test  # noqa: E402
from core.clustered import clustered_rates, clustered_ratio_interval  # noqa: E402
from core.intervals import wilson_interval  # noqa: E402

ARMS = [Arm("none", 1), Arm("assistant", 1, model="t/m", prompt="x")]
MINUTES = {"none": 3.0, "assistant": 2.4}
MER = {"none": 0.25, "assistant": 0.35}
CONCENTRATION, VALIDATED, MEAN_EXTRA = 6.0, 0.8, 11


def simulate_round(rng, people: int, effect: bool) -> dict[str, list[tuple[float, ...]]]:
    """Per arm, per person: (examples, hours, fooled, validated)."""
    settings.SECRET_KEY = secrets.token_hex(32)
    by_arm: dict[str, list[tuple[float, ...]]] = {"none": [], "assistant": []}
    for position in range(people):
        arm = arm_at(ARMS, 1, position)
        truth = arm if effect else "none"
        n = 1 + rng.poisson(MEAN_EXTRA)
        t = rng.gamma(4.0, MINUTES[truth] / 4.0)
        mer = MER[truth]
        p = rng.beta(mer * CONCENTRATION, (1 - mer) * CONCENTRATION)
        fooled = rng.binomial(n, p)
        by_arm[arm].append((float(n), n * t / 60.0, float(fooled), float(rng.binomial(fooled, VALIDATED))))
    return by_arm


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=400)
    parser.add_argument("--people", type=int, default=40)
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    gaps, simple_gaps = [], []
    hits = {(arm, figure): 0 for arm in MINUTES for figure in ("per_hour", "mer")}
    counted = dict.fromkeys(hits, 0)
    rejected = {
        "effect": dict.fromkeys(("per_hour", "mer", "vmer"), 0),
        "none": dict.fromkeys(("per_hour", "mer", "vmer"), 0),
    }
    for r in range(args.rounds):
        for effect in (True, False):
            by_arm = simulate_round(rng, args.people, effect)
            if effect:
                gaps.append(abs(len(by_arm["none"]) - args.people / 2))
                simple_gaps.append(abs(rng.binomial(args.people, 0.5) - args.people / 2))
                for arm, rows in by_arm.items():
                    n, h, f, _ = (np.array(c) for c in zip(*rows, strict=True))
                    interval = clustered_ratio_interval(n, h, seed=r)
                    if interval is not None:
                        counted[(arm, "per_hour")] += 1
                        hits[(arm, "per_hour")] += interval[0] <= 60 / MINUTES[arm] <= interval[1]
                    rate = clustered_rates(f, n, seed=r)[0]
                    if rate.interval is not None:
                        counted[(arm, "mer")] += 1
                        hits[(arm, "mer")] += rate.interval[0] <= MER[arm] <= rate.interval[1]
            a = [np.array(c) for c in zip(*by_arm["none"], strict=True)]
            b = [np.array(c) for c in zip(*by_arm["assistant"], strict=True)]
            tests = {
                "per_hour": permutation_test(a[0], a[1], b[0], b[1], shuffles=1000, seed=r),
                "mer": permutation_test(a[2], a[0], b[2], b[0], shuffles=1000, seed=r),
                "vmer": permutation_test(a[3], a[0], b[3], b[0], shuffles=1000, seed=r),
            }
            for name, test in tests.items():
                rejected["effect" if effect else "none"][name] += (
                    test.p_value is not None and test.p_value < 0.05
                )
    rounds = args.rounds
    print(f"{rounds} simulated rounds of {args.people} people, arms none 1 : assistant 1")
    print(f"arm sizes: largest gap from an even split {max(gaps):.0f} (mean {np.mean(gaps):.2f}); "
          f"simple randomisation: largest {max(simple_gaps):.0f} (mean {np.mean(simple_gaps):.2f})")  # fmt: skip
    for (arm, figure), hit in hits.items():
        total = counted[(arm, figure)]
        low, high = wilson_interval(hit, total)
        truth = 60 / MINUTES[arm] if figure == "per_hour" else MER[arm]
        print(
            f"coverage, {arm:<9} {figure:<8} (true {truth:g}): {hit / total:.1%} [{low:.1%}, {high:.1%}] of {total}"
        )
    for name in ("per_hour", "mer", "vmer"):
        power, size = rejected["effect"][name] / rounds, rejected["none"][name] / rounds
        print(f"test of {name:<8}: p < 0.05 in {power:.1%} of rounds with the effect, {size:.1%} without")
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
