"""The arena's leak-rate measurement (``core.leak_rate``) on simulated models: is its interval honest when
the models cannot be told apart, and how soon does it see a leak when they can?

Run:  .venv/bin/python benchmarks/arena_leak_rate.py [--battles 200] [--repeats 200] [--seed 0]

Each simulated battle has two models answer with 40 words drawn from one vocabulary of 200 words (Zipf
weights, as word frequencies are), and optionally a **tell**: model "p" uses one marker word (say, its
name, or "arr") in place of an ordinary word with probability ``tell`` per answer.

Each battle's two answers also share its prompt's word ("topic<n>"), as real answers to one prompt
share words: the cross-validation keeps a battle's answers in one fold, so that word cannot carry the
guess.

1. **Calibration** (no tell): over ``--repeats`` simulated arenas of ``--battles`` battles, the share whose
   95% Wilson interval covers chance, and the share that reports a leak (interval above chance: a false
   alarm). Coverage near 95% and false alarms near 2.5% are expected if the interval is honest.
2. **Power**: the mean accuracy and the share of arenas reporting a leak, for tells of 0.1 to 1.0 and
   arenas of 50, 200 and 1,000 battles (``--repeats`` / 5 arenas each).
3. **Time** of one measurement on 5,000 battles (the page's cap, ``LEAK_MAX_BATTLES``).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.leak_rate import leak_rate  # noqa: E402

VOCABULARY = [f"w{i}" for i in range(200)]
WEIGHTS = [1 / (i + 1) for i in range(200)]


def arena(n_battles: int, tell: float, rng: random.Random) -> list[tuple[int, str, str]]:
    answers = []
    for battle in range(n_battles):
        for model in ("p", "q"):
            words = [f"topic{battle}", *rng.choices(VOCABULARY, WEIGHTS, k=39)]
            if model == "p" and rng.random() < tell:
                words[rng.randrange(40)] = "marker"
            answers.append((battle, " ".join(words), model))
    return answers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--battles", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)

    covered = alarms = 0
    start = time.perf_counter()
    for k in range(args.repeats):
        found = leak_rate(arena(args.battles, 0.0, rng), seed=k)
        covered += found.low <= found.chance <= found.high
        alarms += found.leaks
    print(
        f"1. Calibration, indistinguishable models, {args.repeats} arenas of {args.battles} battles: interval "
        f"covers chance in {covered / args.repeats:.1%}, reports a leak in {alarms / args.repeats:.1%} "
        f"({time.perf_counter() - start:.1f} s)"
    )
    print("2. Power: mean accuracy (share of arenas reporting a leak), chance 50%")
    each = max(1, args.repeats // 5)
    for n in (50, 200, 1000):
        cells = []
        for tell in (0.1, 0.3, 0.5, 1.0):
            runs = [leak_rate(arena(n, tell, rng), seed=k) for k in range(each)]
            accuracy = sum(r.accuracy for r in runs) / len(runs)
            cells.append(f"tell {tell:.1f}: {accuracy:.1%} ({sum(r.leaks for r in runs) / len(runs):.0%})")
        print(f"   {n:>5} battles: " + "; ".join(cells))
    answers = arena(5000, 0.3, rng)  # the page's cap, LEAK_MAX_BATTLES
    start = time.perf_counter()
    found = leak_rate(answers)
    print(
        f"3. One measurement on 5,000 battles (10,000 answers of 40 words): {time.perf_counter() - start:.2f} s "
        f"(accuracy {found.accuracy:.1%}, {found.low:.1%}-{found.high:.1%})"
    )


if __name__ == "__main__":
    main()
