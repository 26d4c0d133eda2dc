"""Metrics against values computed by hand, and macro-F1 against scikit-learn (a test requirement)."""

from __future__ import annotations

import pytest
from sklearn import metrics as sklearn_metrics

from core.metrics import (
    accuracy,
    consistency,
    macro_f1,
    per_class_f1,
    per_tag_breakdown,
    perf_function,
)

LABELS = ["hateful", "not-hateful"]
H, N = "hateful", "not-hateful"

# Six items:
#   gold  H H H N N N
#   pred  H H N N H H
GOLD = [H, H, H, N, N, N]
PRED = [H, H, N, N, H, H]


def test_accuracy_by_hand():
    # correct: items 1, 2, 4 -> 3 / 6
    assert accuracy(GOLD, PRED) == pytest.approx(0.5)
    assert accuracy([], []) is None


def test_macro_f1_by_hand():
    # hateful:     TP 2 (items 1, 2), FP 2 (items 5, 6), FN 1 (item 3) -> F1 = 2*2 / (2*2 + 2 + 1) = 4/7
    # not-hateful: TP 1 (item 4),     FP 1 (item 3),     FN 2 (5, 6)   -> F1 = 2*1 / (2*1 + 1 + 2) = 2/5
    # macro-F1 = (4/7 + 2/5) / 2 = (20/35 + 14/35) / 2 = 34/70 = 17/35
    assert per_class_f1(GOLD, PRED, LABELS) == pytest.approx({H: 4 / 7, N: 2 / 5})
    assert macro_f1(GOLD, PRED, LABELS) == pytest.approx(17 / 35)


def test_macro_f1_class_absent_from_gold_and_predictions_counts_as_zero():
    # Three labels; "offensive" is in neither gold nor predictions -> F1 0, still in the mean.
    # hateful: TP 1, FP 0, FN 0 -> 1; not-hateful: TP 1 -> 1; offensive: 0.  (1 + 1 + 0) / 3 = 2/3
    assert macro_f1([H, N], [H, N], [H, N, "offensive"]) == pytest.approx(2 / 3)


def test_macro_f1_value_outside_the_label_list_counts_against_the_confused_class():
    # gold H predicted "spam": FN of hateful. gold N predicted N: TP of not-hateful.
    # hateful: TP 0, FP 0, FN 1 -> 0; not-hateful: TP 1, FP 0, FN 0 -> 1; mean 1/2
    assert macro_f1([H, N], ["spam", N], LABELS) == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("gold", "pred", "labels"),
    [
        (GOLD, PRED, LABELS),
        ([H, N], [H, N], [H, N, "offensive"]),
        ([H, N, N, H, "x"], [N, N, "y", H, H], LABELS),
        ([H] * 5, [H] * 5, LABELS),
    ],
)
def test_macro_f1_matches_scikit_learn(gold, pred, labels):
    expected = sklearn_metrics.f1_score(gold, pred, labels=labels, average="macro", zero_division=0)
    assert macro_f1(gold, pred, labels) == pytest.approx(expected)


def test_length_mismatch_raises():
    with pytest.raises(ValueError, match="2 gold labels but 1 predictions"):
        accuracy([H, N], [H])
    with pytest.raises(ValueError, match="label list"):
        macro_f1([H], [H], [])


def test_per_tag_accuracy_by_hand():
    tags = [
        ["functionality:slur", "target:women"],  # H -> H correct
        ["functionality:slur"],  # H -> H correct
        ["functionality:negation", "target:women"],  # H -> N wrong
        ["functionality:negation"],  # N -> N correct
        ["target:women", "target:women"],  # N -> H wrong (a tag repeated on one item counts once)
        [],  # N -> H wrong, no tag: counted nowhere
    ]
    # functionality:slur     items 1, 2  -> 2 correct of 2 = 1.0
    # functionality:negation items 3, 4  -> 1 correct of 2 = 0.5
    # target:women           items 1, 3, 5 -> 1 correct of 3 = 1/3
    assert per_tag_breakdown(tags, GOLD, PRED) == {
        "functionality:negation": {"n": 2, "correct": 1, "accuracy": 0.5},
        "functionality:slur": {"n": 2, "correct": 2, "accuracy": 1.0},
        "target:women": {"n": 3, "correct": 1, "accuracy": pytest.approx(1 / 3)},
    }


def test_consistency_scores_perturbed_against_original_predictions():
    # original predictions H H N N, perturbed H N N N: 3 of 4 unchanged -> accuracy 0.75
    assert consistency([H, H, N, N], [H, N, N, N], perf_function("accuracy", LABELS)) == 0.75
    # macro-F1 of the same: H: TP1 FN1 -> 2/3; N: TP2 FP1 -> 4/5; mean (2/3 + 4/5)/2 = 11/15
    assert consistency([H, H, N, N], [H, N, N, N], perf_function("macro_f1", LABELS)) == pytest.approx(
        11 / 15
    )


def test_unsupported_perf_metric():
    # SQuAD F1 / EM are computed since the QA task (tests/core/test_squad_metrics.py); unknown names are not
    with pytest.raises(ValueError, match="bleu"):
        perf_function("bleu", [])
