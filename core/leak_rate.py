"""How well can an answer's model be told from its text alone? The arena's leak rate.

Pure functions (no Django, no numpy). Min et al. (ICML 2025, "Improving Your Model Ranking on Chatbot
Arena by Vote Rigging") de-anonymise arena models with a simple classifier on their answers; a voter who
can do the same is not voting blind. This measures it the way they did, with the simplest classifier
that works:

1. **Split by battle.** Battles (both answers of one battle go to the same side, since they share a
   prompt) are shuffled with ``seed`` and ``test_share`` of them held out.
2. **Train** a multinomial naive Bayes classifier (Manning, Raghavan & Schütze 2008, *Introduction to
   Information Retrieval*, ch. 13, "Text classification and Naive Bayes", with add-one smoothing) on the
   training answers: the bag of words (lower-cased runs of letters and digits, and each punctuation mark,
   so markdown's ``#``, ``*`` and ``-`` count) labelled with the model that wrote them.
3. **Test** on the held-out answers of models seen in training: accuracy (the share whose model is
   guessed right) with its Wilson 95% interval (``core.intervals.wilson_interval``), against **chance**,
   the accuracy of always guessing the most common model of the training answers (evaluated on the same
   held-out answers). A leak shows as an interval above chance.

The two answers of a held-out battle are scored as two answers; they are dependent (one prompt), which
the Wilson interval ignores, so it is slightly narrow for a small test set. ``benchmarks/arena_leak_rate.py``
checks the measurement on simulated models: indistinguishable ones give an interval that covers chance.
"""

from __future__ import annotations

import math
import random
import re
from collections import Counter, defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from .intervals import wilson_interval

__all__ = ["LeakRate", "leak_rate", "words"]

_WORD = re.compile(r"[^\W_]+|[^\w\s]")
#: Fewest held-out answers for a measurement (fewer: no figure).
MIN_TEST_ANSWERS = 10


def words(text: str) -> list[str]:
    """The bag of words of ``text``: lower-cased runs of letters and digits, and each punctuation mark:
    ``words("**Yes**, 42!") == ["*", "*", "yes", "*", "*", ",", "42", "!"]``."""
    return _WORD.findall(text.casefold())


@dataclass(frozen=True)
class LeakRate:
    """One leak-rate measurement (module docstring): ``accuracy`` on ``tested`` held-out answers of
    ``test_battles`` battles, its Wilson 95% interval ``low``-``high``, ``chance`` (always the most common
    model), ``models`` (how many models were told apart), ``train_battles``; ``accuracy``, ``low``,
    ``high`` and ``chance`` are None when fewer than ``MIN_TEST_ANSWERS`` answers were held out or fewer
    than two models were in training."""

    accuracy: float | None
    low: float | None
    high: float | None
    chance: float | None
    tested: int
    models: int
    train_battles: int
    test_battles: int

    @property
    def leaks(self) -> bool:
        """True when the accuracy's interval lies above chance."""
        return self.low is not None and self.chance is not None and self.low > self.chance

    def as_dict(self) -> dict:
        return {
            "accuracy": self.accuracy,
            "low": self.low,
            "high": self.high,
            "chance": self.chance,
            "tested": self.tested,
            "models": self.models,
            "train_battles": self.train_battles,
            "test_battles": self.test_battles,
            "leaks": self.leaks,
        }


class _NaiveBayes:
    """Multinomial naive Bayes with add-one smoothing over the training vocabulary."""

    def __init__(self, labelled: Sequence[tuple[list[str], Hashable]]):
        self.counts: dict[Hashable, Counter] = defaultdict(Counter)
        documents: Counter = Counter()
        for tokens, label in labelled:
            self.counts[label].update(tokens)
            documents[label] += 1
        self.vocabulary = set().union(*self.counts.values()) if self.counts else set()
        total = sum(documents.values())
        self.log_prior = {label: math.log(n / total) for label, n in documents.items()}
        size = len(self.vocabulary)
        self.totals = {label: sum(counter.values()) + size for label, counter in self.counts.items()}
        self.most_common = (
            max(documents, key=lambda label: (documents[label], str(label))) if documents else None
        )

    def log_scores(self, tokens: list[str]) -> dict[Hashable, float]:
        """Per model, log P(model) + sum of log P(word | model) over ``tokens`` known in training (a word
        never seen says nothing), with P(word | model) = (count + 1) / (model's words + vocabulary)."""
        known = [t for t in tokens if t in self.vocabulary]
        return {
            label: self.log_prior[label]
            + sum(math.log(counter[t] + 1) for t in known)
            - len(known) * math.log(self.totals[label])
            for label, counter in self.counts.items()
        }

    def predict(self, tokens: list[str]) -> Hashable:
        """The model with the highest ``log_scores`` (ties to the first by name)."""
        scores = self.log_scores(tokens)
        return max(scores, key=lambda label: (scores[label], [-ord(c) for c in str(label)]))


def leak_rate(
    answers: Sequence[tuple[Hashable, str, Hashable]], *, test_share: float = 0.3, seed: int = 0
) -> LeakRate:
    """The leak rate (module docstring) of ``answers``: ``(battle, text, model)`` triples, two per battle.

    Raises:
        ValueError: ``test_share`` not strictly between 0 and 1.
    """
    if not 0 < test_share < 1:
        raise ValueError(f"test_share must be between 0 and 1, not {test_share}")
    battles = sorted({battle for battle, _, _ in answers}, key=str)
    random.Random(seed).shuffle(battles)
    held_out = set(battles[: round(len(battles) * test_share)])
    train = [(words(text), model) for battle, text, model in answers if battle not in held_out]
    classifier = _NaiveBayes(train)
    test = [
        (words(text), model)
        for battle, text, model in answers
        if battle in held_out and model in classifier.counts
    ]
    n_train_battles = len(battles) - len(held_out)
    if len(test) < MIN_TEST_ANSWERS or len(classifier.counts) < 2:
        return LeakRate(
            None, None, None, None, len(test), len(classifier.counts), n_train_battles, len(held_out)
        )
    right = sum(classifier.predict(tokens) == model for tokens, model in test)
    chance = sum(model == classifier.most_common for _, model in test) / len(test)
    low, high = wilson_interval(right, len(test))
    return LeakRate(
        right / len(test),
        low,
        high,
        chance,
        len(test),
        len(classifier.counts),
        n_train_battles,
        len(held_out),
    )
