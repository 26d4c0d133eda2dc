"""Evaluation metrics for classification tasks, in pure Python (no numpy, no torch).

All functions take parallel sequences of gold labels and predicted labels (strings) and return floats
in [0, 1]. They raise ``ValueError`` when the sequences differ in length, and return ``None`` for an
empty input (no items: the metric is undefined, not 0).

Formulas:

* accuracy = (number of items with prediction == gold) / n.
* per-class precision P_c = TP_c / (TP_c + FP_c), recall R_c = TP_c / (TP_c + FN_c),
  F1_c = 2 P_c R_c / (P_c + R_c) = 2 TP_c / (2 TP_c + FP_c + FN_c) (van Rijsbergen 1979).
* macro-F1 = mean of F1_c over the task's label list (every label weighs the same, whatever its
  frequency; Sokolova & Lapalme 2009). This is scikit-learn's
  ``f1_score(gold, pred, labels=task_labels, average="macro", zero_division=0)``:

  - a label of the list that is absent from both gold and predictions (TP = FP = FN = 0) has an
    undefined F1; like scikit-learn with ``labels=`` and ``zero_division=0``, it counts as **0** and
    stays in the mean. We chose the scikit-learn behaviour so that figures can be checked with it; the
    consequence is that macro-F1 on a subset holding one class only is at most 1/k for k labels, which
    is why the per-tag breakdown reports accuracy, not macro-F1.
  - a gold or predicted value outside the label list is never a class of its own, but it still counts
    against the listed class it was confused with (an FN of the gold class, an FP of the predicted one).

SQuAD F1 and exact match (span / QA tasks) follow the official SQuAD v1.1 evaluation script
(Rajpurkar et al. 2016, ``evaluate-v1.1.py``) exactly: ``normalize_answer`` lower-cases, removes ASCII
punctuation (``string.punctuation``), removes the articles a/an/the as whole words, and collapses white
space; F1 is the bag-of-tokens overlap F1 of the normalised answers (0 when they share no token, also when
both are empty, as v1.1 does); EM is 1 when the normalised strings are equal; each prediction takes the
maximum over the item's gold answers, and the dataset figure is the mean over items. The official script
prints percentages; here they are fractions in [0, 1] like every other metric.
"""

from __future__ import annotations

import re
import string
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence

__all__ = [
    "PERF_METRICS",
    "accuracy",
    "consistency",
    "macro_f1",
    "per_class_f1",
    "per_tag_breakdown",
    "perf_function",
    "squad_answer_texts",
    "squad_exact_match",
    "squad_exact_match_score",
    "squad_f1",
    "squad_f1_score",
    "squad_normalize_answer",
]


def _check(gold: Sequence, predicted: Sequence) -> int:
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold labels but {len(predicted)} predictions")
    return len(gold)


def accuracy(gold: Sequence[str], predicted: Sequence[str]) -> float | None:
    """Fraction of items whose prediction equals the gold label; ``None`` when there are no items.

    Raises:
        ValueError: if the two sequences differ in length.
    """
    n = _check(gold, predicted)
    if n == 0:
        return None
    return sum(1 for g, p in zip(gold, predicted, strict=True) if g == p) / n


def per_class_f1(gold: Sequence[str], predicted: Sequence[str], labels: Sequence[str]) -> dict[str, float]:
    """F1 of each label of ``labels``: ``2 TP / (2 TP + FP + FN)``, 0 when TP = FP = FN = 0.

    Raises:
        ValueError: if the two sequences differ in length, or ``labels`` is empty or repeats a label.
    """
    _check(gold, predicted)
    if not labels:
        raise ValueError("macro-F1 needs the task's label list")
    if len(set(labels)) != len(labels):
        raise ValueError(f"labels repeat: {list(labels)}")
    tp: dict[str, int] = defaultdict(int)
    fp: dict[str, int] = defaultdict(int)
    fn: dict[str, int] = defaultdict(int)
    for g, p in zip(gold, predicted, strict=True):
        if g == p:
            tp[g] += 1
        else:
            fn[g] += 1
            fp[p] += 1
    scores = {}
    for label in labels:
        denominator = 2 * tp[label] + fp[label] + fn[label]
        scores[label] = 2 * tp[label] / denominator if denominator else 0.0
    return scores


def macro_f1(gold: Sequence[str], predicted: Sequence[str], labels: Sequence[str]) -> float | None:
    """Mean per-class F1 over ``labels`` (scikit-learn ``average="macro", labels=labels,
    zero_division=0``); ``None`` when there are no items. See the module docstring for absent classes.

    Raises:
        ValueError: as ``per_class_f1``.
    """
    if _check(gold, predicted) == 0:
        return None
    scores = per_class_f1(gold, predicted, labels)
    return sum(scores.values()) / len(scores)


def perf_function(perf_metric: str, labels: Sequence[str]) -> Callable[[Sequence, Sequence], float | None]:
    """The task's perf metric as ``f(gold, predicted) -> float | None``.

    Args:
        perf_metric: the task config's ``perf_metric``: ``accuracy``, ``macro_f1`` (labels), or
            ``squad_f1`` / ``exact_match`` (spans: gold targets as ``squad_answer_texts`` reads them,
            predictions as answer strings).
        labels: the task's labels (used by macro-F1).

    Raises:
        ValueError: for an unknown perf metric.
    """
    if perf_metric == "accuracy":
        return accuracy
    if perf_metric == "macro_f1":
        label_list = list(labels)
        return lambda gold, predicted: macro_f1(gold, predicted, label_list)
    if perf_metric == "squad_f1":
        return squad_f1
    if perf_metric == "exact_match":
        return squad_exact_match
    raise ValueError(f"perf metric {perf_metric!r} is not supported for evaluation yet")


PERF_METRICS = ("accuracy", "macro_f1", "squad_f1", "exact_match")


def consistency(
    original: Sequence[str], perturbed: Sequence[str], perf: Callable[[Sequence, Sequence], float | None]
) -> float | None:
    """Fairness / robustness (Dynaboard, Ma et al. 2021): the perf metric of a model's predictions on
    perturbed inputs scored against its **own** predictions on the original inputs, in [0, 1].

    ``original[i]`` and ``perturbed[i]`` are the model's labels for item i before and after the
    perturbation; 1.0 means the perturbation never changed its answer. ``None`` for no items.
    """
    return perf(original, perturbed)


def per_tag_breakdown(
    tags: Sequence[Iterable[str]], gold: Sequence[str], predicted: Sequence[str]
) -> dict[str, dict[str, float | int]]:
    """Accuracy per tag: ``{tag: {"n": items with the tag, "correct": k, "accuracy": k / n}}``.

    An item with several tags counts in each of them (so the ``n`` of the tags add up to more than
    the dataset's size, and the overall accuracy is not the mean of the per-tag ones). An item with
    no tags counts in none. Tags are sorted by name in the result.

    Raises:
        ValueError: if the three sequences differ in length.
    """
    n = _check(gold, predicted)
    if len(tags) != n:
        raise ValueError(f"{len(tags)} tag lists for {n} items")
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for item_tags, g, p in zip(tags, gold, predicted, strict=True):
        for tag in dict.fromkeys(item_tags or ()):  # a tag repeated on one item counts once
            counts[tag][0] += 1
            counts[tag][1] += int(g == p)
    return {
        tag: {"n": total, "correct": correct, "accuracy": correct / total}
        for tag, (total, correct) in sorted(counts.items())
    }


# --- SQuAD (extractive QA) ----------------------------------------------------------------------------

_SQUAD_ARTICLES = re.compile(r"\b(a|an|the)\b")
_SQUAD_PUNCTUATION = frozenset(string.punctuation)


def squad_normalize_answer(text: str) -> str:
    """SQuAD v1.1 ``normalize_answer``: lower case, drop ASCII punctuation, drop a/an/the, fix spaces.

    The steps run in the official order (lower, punctuation, articles, white space), so
    ``"The  Broncos!"`` becomes ``"broncos"`` and ``"an-apple"`` becomes ``"anapple"``.
    """
    text = "".join(ch for ch in text.lower() if ch not in _SQUAD_PUNCTUATION)
    text = _SQUAD_ARTICLES.sub(" ", text)
    return " ".join(text.split())


def squad_f1_score(prediction: str, gold: str) -> float:
    """SQuAD v1.1 ``f1_score`` of one prediction against one gold answer, in [0, 1].

    Tokens are the white-space-separated words of the normalised strings; with ``c`` tokens in common
    (multiset intersection), precision ``c / len(pred)``, recall ``c / len(gold)``, F1 their harmonic
    mean; 0 when ``c == 0`` (also when both normalise to nothing, as in v1.1).
    """
    predicted_tokens = squad_normalize_answer(prediction).split()
    gold_tokens = squad_normalize_answer(gold).split()
    common = sum((Counter(predicted_tokens) & Counter(gold_tokens)).values())
    if common == 0:
        return 0.0
    precision = common / len(predicted_tokens)
    recall = common / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def squad_exact_match_score(prediction: str, gold: str) -> float:
    """1.0 when the normalised prediction equals the normalised gold answer, else 0.0 (SQuAD v1.1)."""
    return float(squad_normalize_answer(prediction) == squad_normalize_answer(gold))


def squad_answer_texts(target) -> list[str]:
    """The gold answer strings of a span target.

    Accepts a string, a list of strings, or the stored span target ``{"answer": str, "answer_start":
    int}``, optionally with ``"answers"`` (every reference answer of the source dataset, e.g. SQuAD's
    1-6 per question; the list is used when present, else the single ``answer``).

    Raises:
        ValueError: for a target with no answer string.
    """
    if isinstance(target, str):
        return [target]
    if isinstance(target, dict):
        answers = target.get("answers")
        if isinstance(answers, list) and answers:
            texts = [a["text"] if isinstance(a, dict) else a for a in answers]
            if all(isinstance(t, str) for t in texts):
                return texts
        if isinstance(target.get("answer"), str):
            return [target["answer"]]
    if isinstance(target, list) and target and all(isinstance(t, str) for t in target):
        return list(target)
    raise ValueError(f"not a span target: {target!r:.200}")


def _squad_mean(
    metric: Callable[[str, str], float], gold: Sequence, predicted: Sequence[str]
) -> float | None:
    n = _check(gold, predicted)
    if n == 0:
        return None
    total = 0.0
    for target, prediction in zip(gold, predicted, strict=True):
        total += max(metric(prediction, answer) for answer in squad_answer_texts(target))
    return total / n


def squad_f1(gold: Sequence, predicted: Sequence[str]) -> float | None:
    """Mean over items of the best ``squad_f1_score`` against the item's gold answers; None for no items.

    ``gold[i]`` is a span target (see ``squad_answer_texts``); ``predicted[i]`` the model's answer text.

    Raises:
        ValueError: if the sequences differ in length or a target has no answer.
    """
    return _squad_mean(squad_f1_score, gold, predicted)


def squad_exact_match(gold: Sequence, predicted: Sequence[str]) -> float | None:
    """Mean over items of the best ``squad_exact_match_score``; None for no items (see ``squad_f1``)."""
    return _squad_mean(squad_exact_match_score, gold, predicted)


def krippendorff_alpha_nominal(units: Iterable[Sequence]) -> float | None:
    """Krippendorff's alpha for nominal data: the agreement of several coders beyond chance.

    ``units`` holds, per unit (an example), the values its coders gave (verdicts; any hashable, one per
    coder, missing coders simply absent). Units with fewer than two values cannot be paired and are
    left out. With the coincidence matrix ``o[c][k] = sum over units of (ordered pairs of values c, k
    from different coders) / (m_u - 1)``, ``n_c = sum_k o[c][k]`` and ``n = sum_c n_c``:

        alpha = 1 - (n - 1) * sum_{c != k} o[c][k] / sum_{c != k} n_c * n_k

    (Krippendorff, "Computing Krippendorff's Alpha-Reliability", 2011, section C, nominal metric).
    1 is perfect agreement, 0 agreement at chance, below 0 systematic disagreement.

    Returns:
        alpha in [-1, 1], or None when fewer than two values are pairable or every pairable value is
        the same (no variation: the expected disagreement is 0 and alpha is undefined).
    """
    coincidences: dict[tuple, float] = defaultdict(float)
    for unit in units:
        values = list(unit)
        m = len(values)
        if m < 2:
            continue
        counts = Counter(values)
        for c, n_c in counts.items():
            for k, n_k in counts.items():
                pairs = n_c * (n_c - 1) if c == k else n_c * n_k
                coincidences[(c, k)] += pairs / (m - 1)
    totals: dict = defaultdict(float)
    for (c, _k), o in coincidences.items():
        totals[c] += o
    n = sum(totals.values())
    if n < 2:
        return None
    observed = sum(o for (c, k), o in coincidences.items() if c != k)
    expected = sum(totals[c] * totals[k] for c in totals for k in totals if c != k)
    if expected == 0:
        return None
    return 1 - (n - 1) * observed / expected
