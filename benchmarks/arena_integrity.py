"""Simulated arenas for the arena's integrity checks (docs/benchmarking.md, "Arena"): no database, the
kernels alone.

Run:  .venv/bin/python benchmarks/arena_integrity.py [--seeds 5] [--models 20] [--votes 20000]
      [--skip-fragility] [--skip-style]

1. **Rigged voters.** Each seed draws an arena of ``--models`` models 25 points apart (a known
   Bradley-Terry truth) and about ``--votes`` votes: honest voters, each casting 1 + an exponential
   number of votes (mean 30, at most 400) on uniformly drawn pairs, 10% ties, the winner drawn from the
   truth; and three kinds of injected voters, each pushing a weak model of its own:
   * **one account** (60 votes, only on battles with its model, always for it);
   * **ten accounts sharing the work** (6 votes each, as the one account: each below the per-voter test's
     10 decisive votes);
   * **five "omnipresent" voters** (150 votes each on drawn pairs, honest except when their model is in
     the battle, then for it).
   The per-voter test (``core.voter_integrity.voter_tests``) and the group test (``group_tests``) run on
   all votes; a voter is caught when either flags them. Printed: recall per kind (caught / injected) and
   the false-positive rate on honest voters with its Wilson 95% interval, over all seeds, and each
   test's time; then each pushed model's fitted score minus its true score, in points, with all votes and
   without the caught voters' (both fits and the truth centred on 1000).
2. **Fragility against brute force** (``core.fragility``): 20 seeded arenas of 5 models and 12 votes,
   each model's greedy count against the exact fewest over every subset of up to 3 removals.
3. **Style control** (``core.style_control``): per seed, 20 models and ``--votes`` votes whose log-odds
   add 0.5 x the standardised length difference; the length coefficient, its bootstrap interval, and
   whether the interval covers 0.5.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.fragility import fewest_removals_exhaustive, rank_fragility  # noqa: E402
from core.intervals import wilson_interval  # noqa: E402
from core.pairwise import fit_bradley_terry  # noqa: E402
from core.style_control import StyledVote, style_controlled  # noqa: E402
from core.voter_integrity import group_tests, voter_tests  # noqa: E402

KINDS = ("one", "shared", "omnipresent")
PLAIN = {"length": 10, "headers": 0, "lists": 0, "bold": 0}


def simulate(seed: int, n_models: int, n_votes: int):
    """``(votes, truth, targets)``: ``(voter, a, b, outcome)`` tuples shuffled, true scores (points) by
    model, and the model each injected kind pushes (the 4th, 3rd and 2nd weakest)."""
    rng = random.Random(seed)
    models = [f"m{i:02d}" for i in range(n_models)]
    truth = {m: 1000 + 25 * (n_models / 2 - i) for i, m in enumerate(models)}
    targets = dict(zip(KINDS, models[-4:-1], strict=True))

    def honest(a, b):
        if rng.random() < 0.1:
            return "tie"
        return "a" if rng.random() < 1 / (1 + 10 ** ((truth[b] - truth[a]) / 400)) else "b"

    def battle_with(model):
        other = rng.choice([m for m in models if m != model])
        return (model, other) if rng.random() < 0.5 else (other, model)

    votes = []
    injected = 60 + 10 * 6 + 5 * 150
    voter = 0
    while len(votes) < n_votes - injected:
        for _ in range(min(1 + int(rng.expovariate(1 / 30)), 400)):
            a, b = rng.sample(models, 2)
            votes.append((f"honest-{voter}", a, b, honest(a, b)))
        voter += 1
    for name, count in [("one-0", 60)] + [(f"shared-{k}", 6) for k in range(10)]:
        target = targets[name.split("-")[0]]
        for _ in range(count):
            a, b = battle_with(target)
            votes.append((name, a, b, "a" if a == target else "b"))
    target = targets["omnipresent"]
    for k in range(5):
        for _ in range(150):
            a, b = rng.sample(models, 2)
            outcome = ("a" if a == target else "b") if target in (a, b) else honest(a, b)
            votes.append((f"omnipresent-{k}", a, b, outcome))
    rng.shuffle(votes)
    return votes, truth, targets


def rigged_voters(seeds: int, n_models: int, n_votes: int) -> None:
    print(f"1. Rigged voters: {seeds} simulated arenas of {n_models} models, about {n_votes:,} votes each")
    caught = dict.fromkeys(KINDS, 0)
    injected = dict.fromkeys(KINDS, 0)
    honest_flagged = honest_total = 0
    seconds = {"per-voter": 0.0, "group": 0.0}
    for seed in range(seeds):
        votes, truth, targets = simulate(seed, n_models, n_votes)
        start = time.perf_counter()
        per_voter = voter_tests(votes)
        seconds["per-voter"] += time.perf_counter() - start
        start = time.perf_counter()
        groups = group_tests(votes, seed=seed)
        seconds["group"] += time.perf_counter() - start
        flagged = {v for v, t in per_voter.items() if t.flagged}
        flagged |= {v for g in groups.values() if g.flagged for v in g.voters}
        for voter in per_voter:
            kind = voter.split("-")[0]
            if kind == "honest":
                honest_total += 1
                honest_flagged += voter in flagged
            else:
                injected[kind] += 1
                caught[kind] += voter in flagged
        everyone = fit_bradley_terry([(a, b, o) for _, a, b, o in votes])
        kept = fit_bradley_terry([(a, b, o) for v, a, b, o in votes if v not in flagged], models=list(truth))
        centre = sum(truth.values()) / len(truth) - 1000  # the fits average 1000 over the models
        moved = ", ".join(
            f"{kind} {m} {everyone[m] - truth[m] + centre:+.0f} -> {kept[m] - truth[m] + centre:+.0f}"
            for kind, m in targets.items()
        )
        groups_flagged = sorted(m for m, g in groups.items() if g.flagged)
        print(
            f"   seed {seed}: {len(votes):,} votes, {sum(v.startswith('honest') for v in per_voter)} honest voters;"
            f" groups flagged {groups_flagged}; pushed models' error in points, all votes -> without the"
            f" caught: {moved}"
        )
    for kind in KINDS:
        low, high = wilson_interval(caught[kind], injected[kind])
        print(
            f"   recall, {kind}: {caught[kind]} of {injected[kind]} ({caught[kind] / injected[kind]:.0%}, "
            f"95% {low:.0%}-{high:.0%})"
        )
    low, high = wilson_interval(honest_flagged, honest_total)
    print(
        f"   false positives on honest voters: {honest_flagged} of {honest_total} "
        f"({honest_flagged / honest_total:.1%}, 95% {low:.1%}-{high:.1%}); aim at most 5%"
    )
    print(
        f"   time per arena: per-voter test {seconds['per-voter'] / seeds:.1f} s, "
        f"group test {seconds['group'] / seeds:.2f} s"
    )


def fragility_against_brute_force() -> None:
    print(
        "2. Fragility: greedy search against every subset of up to 3 removals (20 arenas, 5 models, 12 votes)"
    )
    compared = exact = above = none_both = 0
    for seed in range(20):
        rng = random.Random(1000 + seed)
        models = [f"m{i}" for i in range(5)]
        strength = {m: rng.uniform(0, 2) for m in models}
        votes = []
        for _ in range(12):
            a, b = rng.sample(models, 2)
            p = 1 / (1 + 10 ** (strength[b] - strength[a]))
            u = rng.random()
            votes.append((a, b, "a" if u < 0.9 * p else "b" if u < 0.9 else "tie"))
        for model in models:
            greedy = rank_fragility(votes, model, models=models, max_removals=10).removals
            fewest = fewest_removals_exhaustive(votes, model, 3, models=models)
            compared += 1
            if fewest is None:
                none_both += greedy is None or greedy > 3
                exact += greedy is None
                continue
            if greedy is None or greedy < fewest:
                raise AssertionError(f"greedy {greedy} below the fewest {fewest} (seed {seed}, {model})")
            exact += greedy == fewest
            above += greedy > fewest
    print(
        f"   {compared} models: greedy equal to the exact fewest in {exact}, above it in {above}, "
        f"never below; {none_both} need more than 3 by both"
    )


def style_recovery(seeds: int, n_models: int, n_votes: int) -> None:
    beta = 0.5
    print(
        f"3. Style control: length effect {beta} in {seeds} arenas of {n_models} models, {n_votes:,} votes each"
    )
    covered = 0
    for seed in range(seeds):
        rng = random.Random(2000 + seed)
        theta = {f"m{i:02d}": 0.06 * (n_models / 2 - i) for i in range(n_models)}
        raw = []
        for _ in range(n_votes):
            a, b = rng.sample(sorted(theta), 2)
            la, lb = rng.randint(5, 300), rng.randint(5, 300)
            raw.append((a, b, la, lb, (la - lb) / (la + lb + 1)))
        d = np.array([r[4] for r in raw])
        mean, sd = d.mean(), d.std()
        votes = []
        for a, b, la, lb, diff in raw:
            p = 1 / (1 + math.exp(-(theta[a] - theta[b] + beta * (diff - mean) / sd)))
            outcome = "a" if rng.random() < p else "b"
            votes.append(StyledVote(a, b, outcome, {**PLAIN, "length": la}, {**PLAIN, "length": lb}))
        start = time.perf_counter()
        got = style_controlled(votes, samples=100)
        low, high = got.coefficient_intervals["length"]
        covered += low <= beta <= high
        print(
            f"   seed {seed}: length coefficient {got.coefficients['length']:.3f} (95% {low:.3f}-{high:.3f}), "
            f"fit with 100 bootstrap samples in {time.perf_counter() - start:.1f} s"
        )
    print(f"   the interval covers {beta} in {covered} of {seeds}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--models", type=int, default=20)
    parser.add_argument("--votes", type=int, default=20_000)
    parser.add_argument("--skip-fragility", action="store_true")
    parser.add_argument("--skip-style", action="store_true")
    args = parser.parse_args()
    rigged_voters(args.seeds, args.models, args.votes)
    if not args.skip_fragility:
        fragility_against_brute_force()
    if not args.skip_style:
        style_recovery(args.seeds, args.models, args.votes)


if __name__ == "__main__":
    main()
