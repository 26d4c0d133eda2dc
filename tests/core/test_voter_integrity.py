"""The per-voter test of core/voter_integrity.py: z worked by hand on two voters, and a simulated arena
where honest voters are flagged at about the test's 5% while an account pushing one model and an
"omnipresent" voter (honest except for their target) are flagged with the model named."""

from __future__ import annotations

import math
import random

import pytest

from core.voter_integrity import MIN_VOTES, Z_MEMBER, group_tests, voter_tests


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


def _group_arena(seed, *, with_group):
    """8 models; 80 honest voters with 3 to 40 votes each; with ``with_group``, eight accounts of 6 votes
    each (below the per-voter test's 10), only in battles with m6, always for it."""
    rng = random.Random(seed)
    models = [f"m{i}" for i in range(8)]
    theta = {m: 0.3 * (3.5 - i) for i, m in enumerate(models)}
    votes = []
    for v in range(80):
        for _ in range(rng.randint(3, 40)):
            a, b = rng.sample(models, 2)
            votes.append(
                (f"honest-{v}", a, b, "a" if rng.random() < 1 / (1 + math.exp(theta[b] - theta[a])) else "b")
            )
    if with_group:
        for k in range(8):
            for _ in range(6):
                other = rng.choice(models[:6] + models[7:])
                a, b = ("m6", other) if rng.random() < 0.5 else (other, "m6")
                votes.append((f"shared-{k}", a, b, "a" if a == "m6" else "b"))
    return votes


def test_a_group_sharing_the_work_is_flagged_and_an_honest_arena_is_not():
    votes = _group_arena(11, with_group=True)
    per_voter = voter_tests(votes)
    shared = [v for v in per_voter if v.startswith("shared")]
    assert not any(per_voter[v].flagged for v in shared)  # 6 votes each: not tested alone
    groups = group_tests(votes, seed=0)
    flagged = {m for m, g in groups.items() if g.flagged}
    assert flagged == {"m6"}
    group = groups["m6"]
    assert set(shared) <= set(group.voters) and group.count == len(group.voters)
    assert group.count - 8 <= 2  # at most two honest voters caught with the group
    assert group.excess == pytest.approx((group.count - group.expected) / (group.sd + 0.5))
    assert group.excess > group.threshold
    # The same arena without the group: no model flagged, with this seed and the next.
    for seed in (11, 12):
        assert not any(g.flagged for g in group_tests(_group_arena(seed, with_group=False), seed=0).values())


def test_group_membership_by_hand():
    """Two models. Ten voters each see x beat y once; voter G chose y in 6 of 6. On the fit of all the votes
    (one pseudo-tie), q = P(x beats y) = (10 + 0.5) / 17; G's z_y = 6 (1 - (1 - q)) / sqrt(6 q (1 - q)), above
    2.326 with information 6 q (1 - q) >= 1: G is y's one member. An honest voter's z_x =
    (1 - q) / sqrt(q (1 - q)), under 2.326, with information q(1 - q) < 1: not a member."""
    votes = [(f"h{i}", "x", "y", "a") for i in range(10)] + [("G", "x", "y", "b")] * 6
    q = 10.5 / 17
    z_g = 6 * q / math.sqrt(6 * q * (1 - q))
    assert z_g > Z_MEMBER and 6 * q * (1 - q) >= 1
    groups = group_tests(votes, samples=50, seed=1)
    assert groups["y"].voters == ("G",) and groups["x"].voters == ()
    assert not groups["y"].flagged  # one voter is the per-voter test's case, not a group


def test_group_test_refuses_bad_settings():
    with pytest.raises(ValueError):
        group_tests([("u", "x", "y", "a")], samples=0)
    with pytest.raises(ValueError):
        group_tests([("u", "x", "y", "a")], level=1.0)
    assert group_tests([("u", "x", "y", "tie")]) == {}
