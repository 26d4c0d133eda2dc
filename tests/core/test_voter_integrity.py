"""The per-voter test of core/voter_integrity.py: z worked by hand on two voters, and a simulated arena
where honest voters are flagged at about the test's 5% while an account pushing one model and an
"omnipresent" voter (honest except for their target) are flagged with the model named."""

from __future__ import annotations

import math
import random

import pytest

from core.voter_integrity import MIN_VOTES, voter_tests


def test_z_by_hand():
    """B: x beat y 6 times, y beat x twice; A: y beat x 10 times. Without A's votes, with one pseudo-tie,
    q = P(x beats y) = 6.5 / 9. Each of A's votes: l = log(1 - q), E = q log q + (1 - q) log(1 - q),
    Var = q (1 - q) log(q / (1 - q))²; z = 10 (l - E) / sqrt(10 Var)."""
    votes = [("B", "x", "y", "a")] * 6 + [("B", "x", "y", "b")] * 2 + [("A", "x", "y", "b")] * 10
    q = 6.5 / 9
    expected = q * math.log(q) + (1 - q) * math.log(1 - q)
    variance = q * (1 - q) * math.log(q / (1 - q)) ** 2
    z = 10 * (math.log(1 - q) - expected) / math.sqrt(10 * variance)
    got = voter_tests(votes)
    assert got["A"].z == pytest.approx(z, abs=1e-4) and got["A"].flagged and z < -1.6449
    # A chose y every time: y is favoured, z_y = 10 (1 - (1 - q)) / sqrt(10 q (1 - q)) = 10 q / sqrt(10 q (1 - q)).
    assert (got["A"].votes, got["A"].pushed) == (10, "y")
    assert got["A"].pushed_z == pytest.approx(10 * q / math.sqrt(10 * q * (1 - q)), abs=1e-4)
    assert got["B"].z is None and not got["B"].flagged  # 8 decisive votes: fewer than MIN_VOTES
    assert MIN_VOTES == 10


def test_a_simulated_arena():
    rng = random.Random(5)
    models = [f"m{i}" for i in range(8)]
    theta = {m: 0.6 * (3.5 - i) for i, m in enumerate(models)}
    votes = []

    def choice(a, b):
        return "a" if rng.random() < 1 / (1 + math.exp(theta[b] - theta[a])) else "b"

    for v in range(60):  # honest: 40 votes each, as the true strengths say
        for _ in range(40):
            a, b = rng.sample(models, 2)
            votes.append((f"honest-{v}", a, b, choice(a, b)))
    for _ in range(40):  # one account in battles with m6 only, always for m6
        other = rng.choice([m for m in models if m != "m6"])
        a, b = ("m6", other) if rng.random() < 0.5 else (other, "m6")
        votes.append(("rigged", a, b, "a" if a == "m6" else "b"))
    for _ in range(60):  # honest except when m6 is in the battle
        a, b = rng.sample(models, 2)
        votes.append(("omnipresent", a, b, ("a" if a == "m6" else "b") if "m6" in (a, b) else choice(a, b)))
    got = voter_tests(votes)
    honest_flagged = sum(t.flagged for k, t in got.items() if k.startswith("honest"))
    assert honest_flagged <= 6  # the test's level is 5%: 3 of 60 expected; 1 with this seed
    for name in ("rigged", "omnipresent"):
        assert got[name].flagged and got[name].pushed == "m6", got[name]


def test_ties_are_not_tested():
    votes = [("A", "x", "y", "tie")] * 12 + [("B", "x", "y", "a")] * 3
    assert voter_tests(votes)["A"].votes == 0 and voter_tests(votes)["A"].z is None
