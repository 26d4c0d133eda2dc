"""A pairwise judge's figures (core/pairwise_judge.py), worked by hand."""

from __future__ import annotations

import pytest

from core.intervals import wilson_interval
from core.pairwise_judge import combine, pairwise_judge_figures, unswap


def test_both_orders_combine_and_a_flip_is_a_tie():
    assert combine("a", "a") == "a" and combine("b", "b") == "b" and combine("tie", "tie") == "tie"
    assert combine("a", "b") == "tie"  # it preferred the first shown both times: a flip
    assert combine("a", None) is None
    # Shown b first, it said "a" (the first shown): that is b.
    assert unswap("a") == "b" and unswap("b") == "a" and unswap("tie") == "tie" and unswap(None) is None
    with pytest.raises(ValueError, match="preference"):
        combine("first", "a")


def test_figures_by_hand():
    # Three models x, y, z. People: x beats y twice, y beats z twice, x beats z once.
    battles = {
        1: ("x", "y", "a"),
        2: ("x", "y", "a"),
        3: ("y", "z", "a"),
        4: ("y", "z", "a"),
        5: ("x", "z", "a"),
        6: ("x", "z", "both_bad"),  # people's "both bad" is a tie
        7: ("y", "x", None),  # not voted: judged, not compared
    }
    orders = {
        1: ("a", "a"),  # x: agrees
        2: ("a", "b"),  # a flip: tie, disagrees with people's a
        3: ("a", "a"),  # agrees
        4: ("a", "a"),  # agrees
        5: ("a", "a"),  # agrees
        6: ("tie", "tie"),  # agrees with both_bad
        7: ("b", "b"),
        8: ("a", None),  # one order unread: not judged
    }
    got = pairwise_judge_figures(orders, battles)
    assert (got.judged, got.flips, got.compared, got.agreeing) == (7, 1, 6, 5)
    assert got.flip_rate == 1 / 7 and got.flip_interval == wilson_interval(1, 7)
    assert got.agreement == 5 / 6 and got.agreement_interval == wilson_interval(5, 6)
    # Both rankings order x > y > z (the judge's tie on battle 2 still leaves x ahead): tau = 1.
    assert (got.models, got.rank_correlation) == (3, 1.0)


def test_a_judge_reversing_people_ranks_them_in_reverse():
    battles = {i: ("x", "y", "a") for i in range(5)} | {i + 5: ("y", "z", "a") for i in range(5)}
    orders = {i: ("b", "b") for i in range(10)}
    got = pairwise_judge_figures(orders, battles)
    assert got.agreement == 0.0 and got.rank_correlation == -1.0


def test_nothing_judged():
    got = pairwise_judge_figures({}, {})
    assert (got.judged, got.flip_rate, got.agreement, got.rank_correlation) == (0, None, None, None)
