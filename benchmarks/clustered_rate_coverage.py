"""Coverage of the attack success rate's interval across people (``core.clustered``) against Wilson's
interval over conversations taken as independent, on simulated red-teaming rounds.

Run:  .venv/bin/python benchmarks/clustered_rate_coverage.py [--rounds 1000] [--people 30] [--seed 7]

Each simulated round (docs/generative.md, "Intervals across people"):
  * ``--people`` red-teamers; person i writes n_i conversations, n_i = 1 + a negative binomial draw
    (mean ``--mean-conversations``, dispersion 1: a few people write most of the round, as in a crowd);
  * person i's attacks succeed with their own probability p_i ~ Beta(a, b) of mean ``--rate`` and
    concentration ``--concentration`` (a + b; the intra-person correlation is 1 / (a + b + 1): 0.17 by
    default), drawn independently of n_i, so the round's true attack success rate is ``--rate``;
  * each conversation fails the model with probability p_i.
Prints, per setting, the share of rounds whose 95% interval holds the true rate (the aim: 93-97% for the
clustered interval), with the binomial interval of that share, and the intervals' mean width.
Also the same with every person equal (concentration 10^6: no person effect), where both should cover,
and at a rare rate (3%: a kind of failure few people find), where the sparse rows take Wilson's interval
on the effective sample size.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.clustered import clustered_rates  # noqa: E402
from core.intervals import wilson_interval  # noqa: E402


def simulate(rounds: int, people: int, mean_n: float, rate: float, concentration: float, seed: int) -> dict:
    """Coverage and mean width of both intervals over ``rounds`` simulated rounds."""
    rng = np.random.default_rng(seed)
    a, b = rate * concentration, (1 - rate) * concentration
    hits = {"clustered": 0, "iid": 0}
    widths = {"clustered": [], "iid": []}
    for r in range(rounds):
        # Negative binomial with dispersion 1 (geometric): mean mean_n - 1 above the one conversation.
        n = 1 + rng.negative_binomial(1, 1 / mean_n, size=people)
        p = rng.beta(a, b, size=people)
        y = rng.binomial(n, p)
        got = clustered_rates(y, n, seed=r)[0]
        for name, (low, high) in (("clustered", got.interval), ("iid", got.iid_interval)):
            hits[name] += low <= rate <= high
            widths[name].append(high - low)
    return {
        name: (hits[name] / rounds, wilson_interval(hits[name], rounds), float(np.mean(widths[name])))
        for name in hits
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--people", type=int, nargs="+", default=[5, 10, 30, 100])
    parser.add_argument("--mean-conversations", type=float, default=8.0)
    parser.add_argument("--rate", type=float, nargs="+", default=[0.2, 0.03])
    parser.add_argument("--concentration", type=float, default=5.0)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    icc = 1 / (args.concentration + 1)
    print(f"{args.rounds} simulated rounds per line; conversations per person 1 + geometric, mean "
          f"{args.mean_conversations}; 95% intervals")  # fmt: skip
    print("| true rate | people | person effect (intra-person correlation) | clustered coverage | iid coverage | "
          "clustered mean width | iid mean width |")  # fmt: skip
    print("|---:|---:|---|---:|---:|---:|---:|")
    started = time.perf_counter()
    for rate in args.rate:
        for people in args.people:
            for concentration, label in ((args.concentration, f"{icc:.2f}"), (1e6, "none")):
                got = simulate(args.rounds, people, args.mean_conversations, rate, concentration, args.seed)
                (cc, (cl, ch), cw), (ic, (il, ih), iw) = got["clustered"], got["iid"]
                print(f"| {rate} | {people} | {label} | {cc:.1%} ({cl:.1%}-{ch:.1%}) | {ic:.1%} ({il:.1%}-{ih:.1%}) | "
                      f"{cw:.3f} | {iw:.3f} |")  # fmt: skip
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
