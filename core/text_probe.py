"""A bag-of-words classifier: can the words of a text tell its class? A logistic regression on word
presence, scored by stratified k-fold cross-validation against chance. Pure: texts and class names in,
figures out (no database, no model of the registry; scikit-learn on the CPU, one thread). Two users: the
artefact probes (``cycle.probes``: can a bag of words guess the label, or the writer?) and the arena's
leak rate (``core.leak_rate``: can it guess which model wrote an answer?).

Why a bag of words: an artefact is a surface cue (a word, an emoji, a negation) that gives the answer
away; a model that reads only such cues and still beats chance shows the cue is in the data (Gururangan
et al. 2018, "Annotation Artifacts in Natural Language Inference Data", NAACL; Poliak et al. 2018,
"Hypothesis Only Baselines in Natural Language Inference", *SEM; Geva, Goldberg and Berant 2019, "Are We
Modeling the Task or the Annotator?", EMNLP).
"""

from __future__ import annotations

import random
import re
import warnings
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from core.intervals import wilson_interval

#: Cross-validation folds at most (k); fewer when the smallest class has fewer examples.
MAX_FOLDS = 5
#: The seed of the fold shuffle, the sample and the classifier: the same data gives the same figures.
SEED = 0
#: A token: a run of word characters (any script: Latin, Arabic, Hebrew, CJK...), or one character that
#: is neither a word character nor a space (an emoji, a punctuation mark), so emoji count as words.
TOKEN_PATTERN = r"(?u)\b\w+\b|[^\w\s]"
_TOKEN = re.compile(TOKEN_PATTERN)
#: The vocabulary keeps the most frequent words, so a large round's model stays small.
MAX_FEATURES = 20_000
#: A larger round is probed on a random sample of this many examples (seeded).
MAX_EXAMPLES = 20_000
#: How many of the most predictive words per class are kept (``top_features``).
TOP_FEATURES = 5
#: The features, in words, for the page and the card.
FEATURES = "bag of words (which words and symbols, emoji included, a text holds), logistic regression"


class NotMeasurable(Exception):
    """The data cannot answer the question (one class only, too few examples per class); says why."""


@dataclass
class ProbeFigures:
    """A measured probe: ``accuracy`` (pooled out-of-fold correct / n, in [0, 1]), ``chance`` (the
    majority class's share of the n examples), ``interval`` (Wilson 95% of the accuracy), ``folds`` (k),
    ``fold_accuracies`` (one per fold, in fold order), ``classes`` (examples per class, by class name),
    ``sampled_from`` (examples before the sample; equal to n when none was drawn) and ``top_features``
    (class name -> up to ``TOP_FEATURES`` words that most predict it, from a fit on every example; empty
    unless asked)."""

    accuracy: float
    chance: float
    n: int
    folds: int
    interval: tuple[float, float]
    fold_accuracies: list[float]
    classes: dict[str, int]
    sampled_from: int
    top_features: dict[str, list[str]] = field(default_factory=dict)
    #: The groups the folds kept together (``groups`` given): their number; 0 when not grouped.
    groups: int = 0

    @property
    def n_classes(self) -> int:
        return len(self.classes)


def has_words(text: str) -> bool:
    """Whether ``text`` holds at least one token (``TOKEN_PATTERN``): an empty or blank text has none."""
    return isinstance(text, str) and _TOKEN.search(text) is not None


def bag_of_words_classifier(seed: int = SEED):
    """An unfitted scikit-learn pipeline: ``CountVectorizer`` (``TOKEN_PATTERN``, lower case, presence,
    at most ``MAX_FEATURES`` words) then ``LogisticRegression`` seeded with ``seed``."""
    # Imported here: scikit-learn takes a second to import, and only the probe job needs it.
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    # Presence (binary), not TF-IDF: a cue in half the texts of a class has a low IDF, and TF-IDF then
    # ranks it below the rare words of single texts; presence lets the classifier weigh it by its worth.
    return make_pipeline(
        CountVectorizer(token_pattern=TOKEN_PATTERN, lowercase=True, max_features=MAX_FEATURES, binary=True),
        LogisticRegression(max_iter=2000, random_state=seed),
    )


def top_features_of(pipeline, k: int) -> dict[str, list[str]]:
    """Class name -> up to ``k`` words with the largest positive weight for it, of a fitted
    ``bag_of_words_classifier``."""
    vectorizer, classifier = pipeline[0], pipeline[-1]
    words = vectorizer.get_feature_names_out()
    classes = [str(c) for c in classifier.classes_]
    coefficients = classifier.coef_
    # Two classes: one row of weights, positive for classes_[1] and negative for classes_[0].
    rows = [-coefficients[0], coefficients[0]] if len(classes) == 2 else list(coefficients)
    top = {}
    for name, weights in zip(classes, rows, strict=True):
        order = sorted(range(len(words)), key=lambda i: (-weights[i], words[i]))
        top[name] = [str(words[i]) for i in order[:k] if weights[i] > 0]
    return top


def cross_validated_accuracy(
    texts: Sequence[str],
    classes: Sequence[str],
    *,
    what: str = "class",
    seed: int = SEED,
    max_folds: int = MAX_FOLDS,
    top_features: int = 0,
    groups: Sequence[str] | None = None,
) -> ProbeFigures:
    """Predict ``classes[i]`` from ``texts[i]`` with a bag of words and a logistic regression, scored by
    stratified k-fold cross-validation.

    k = min(``max_folds``, the smallest class's count); each fold's classifier (vectorizer included) is
    fitted on the other folds only, so no word of a test fold is seen in training.

    ``groups`` (one key per example): examples of one group stay in one fold (scikit-learn's
    ``StratifiedGroupKFold``, stratified as far as the groups allow; k at most the number of groups).
    A dataset of minimal pairs (an original and its edited twin of the other label) needs it: split
    apart, the twin in training teaches the classifier the words of the test example with the opposite
    label, and the accuracy falls below chance (a fold leak, not a measure of the cue). ``accuracy`` pools the
    folds' predictions (correct / n); ``chance`` is the majority class's share, what always answering the
    most frequent class scores. Above ``MAX_EXAMPLES`` a seeded random sample is probed.

    Args:
        texts: one text per example, each with at least one token (``has_words``).
        classes: one class name per example (a label, or an author's id as a string).
        what: the word for a class in messages ("label", "author").
        seed: shuffles the folds and the sample and seeds the classifier.
        max_folds: at most this many folds (at least 2).
        top_features: keep this many most predictive words per class (0: none; fits once more).

    Returns:
        The figures (``ProbeFigures``).

    Raises:
        NotMeasurable: fewer than two classes, or a class with fewer than two examples (no fold split
            can then test it).
        ValueError: ``texts``, ``classes`` (and ``groups``) differ in length, or ``max_folds`` < 2.
    """
    if len(texts) != len(classes):
        raise ValueError(f"{len(texts)} texts but {len(classes)} classes")
    if groups is not None and len(groups) != len(texts):
        raise ValueError(f"{len(texts)} texts but {len(groups)} groups")
    if max_folds < 2:
        raise ValueError(f"cross-validation needs at least 2 folds, not {max_folds}")
    sampled_from = len(texts)
    indices = list(range(len(texts)))
    if len(indices) > MAX_EXAMPLES:
        indices = sorted(random.Random(seed).sample(indices, MAX_EXAMPLES))
    texts = [texts[i] for i in indices]
    classes = [str(classes[i]) for i in indices]
    keys = [str(groups[i]) for i in indices] if groups is not None else None
    counts = Counter(classes)
    if len(counts) < 2:
        only = next(iter(counts), None)
        raise NotMeasurable(
            f"only one {what} ({only}) among {len(texts)} example(s): there is nothing to tell apart"
            if only is not None
            else "no example to probe"
        )
    smallest = min(counts.values())
    if smallest < 2:
        rare = sorted(name for name, count in counts.items() if count < 2)
        raise NotMeasurable(
            f"the {what}{'s' if len(rare) > 1 else ''} {', '.join(rare)} "
            f"{'have' if len(rare) > 1 else 'has'} a single example: cross-validation needs at least two "
            f"of each {what}"
        )
    folds = min(max_folds, smallest)
    if keys is not None:
        distinct = len(set(keys))
        if distinct < 2:
            raise NotMeasurable(f"the {len(texts)} examples form a single group: no fold split can test one")
        folds = min(folds, distinct)

    from sklearn.model_selection import StratifiedGroupKFold, StratifiedKFold
    from threadpoolctl import threadpool_limits

    labels = list(classes)
    fold_accuracies: list[float] = []
    correct = 0
    # One thread: the probe job shares the machine with the web (core.job_priority); a few seconds
    # longer is better than taking every core from the requests.
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence notes on tiny folds; the figures say enough
        if keys is None:
            splits = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed).split(texts, labels)
        else:
            splitter = StratifiedGroupKFold(n_splits=folds, shuffle=True, random_state=seed)
            splits = splitter.split(texts, labels, keys)
        for train, test in splits:
            pipeline = bag_of_words_classifier(seed)
            pipeline.fit([texts[i] for i in train], [labels[i] for i in train])
            predicted = pipeline.predict([texts[i] for i in test])
            right = sum(str(p) == labels[i] for p, i in zip(predicted, test, strict=True))
            correct += right
            fold_accuracies.append(right / len(test))
        top = {}
        if top_features > 0:
            pipeline = bag_of_words_classifier(seed)
            pipeline.fit(texts, labels)
            top = top_features_of(pipeline, top_features)
    n = len(texts)
    return ProbeFigures(
        accuracy=correct / n,
        chance=max(counts.values()) / n,
        n=n,
        folds=folds,
        interval=wilson_interval(correct, n),
        fold_accuracies=fold_accuracies,
        classes=dict(sorted(counts.items())),
        sampled_from=sampled_from,
        top_features=top,
        groups=len(set(keys)) if keys is not None else 0,
    )
