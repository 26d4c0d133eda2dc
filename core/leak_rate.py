"""How well can an answer's model be told from its text alone? The arena's leak rate.

Pure functions (no Django). Min et al. (ICML 2025, "Improving Your Model Ranking on Chatbot Arena by Vote
Rigging") de-anonymise arena models with a simple classifier on their answers; a voter who can do the
same is not voting blind. This measures it with the artefact probes' classifier
(``core.text_probe.bag_of_words_classifier``: a bag of words, emoji and punctuation included so markdown
counts, and a logistic regression, scikit-learn):

1. **Split by battle.** The battles are shuffled (``seed``) and ``TEST_SHARE`` of them held out, both
   answers of a battle on one side: they answer one prompt, and a battle split across the sides would
   let the prompt's words, not the model's, carry the guess.
2. **Train** on the other battles' answers, labelled with the model that wrote them. Besides its words,
   each answer carries two cues a voter sees at a glance, as pseudo-words (``with_cues``): its length
   (``length_N``, N the power of two nearest below its word count) and whether it stops mid-sentence
   (``unfinished``: its last character is not sentence-final punctuation, as an answer cut at the
   model's token limit). A fresh tester told the demo's two models apart in 37 of 42 battles by length
   alone while the words-only figure said "not above chance".
3. **Test** on the held-out answers of models seen in training: the accuracy, against **chance**, the
   share of the held-out answers written by the training's most common model (what always guessing it
   scores). A leak shows as an interval above chance.

**Why one split, and the interval.** Cross-validation would use every battle, but its folds share
training data, so its pooled accuracy varies more than any binomial interval says: on simulated models
that cannot be told apart, a Wilson interval on 5-fold accuracy covered chance in 82% of arenas and cried
leak in 8% (``benchmarks/arena_leak_rate.py``). With one fixed classifier, the held-out answers are
independent but for the two of one battle (guessed from one prompt: calling both by the same model gets
exactly one right), so the interval is Wilson's score interval on Kish's effective sample size with the
battle as the cluster (``core.clustered.effective_sample_size``, ``core.intervals.wilson_share``); its
coverage is measured by the same benchmark.
"""

from __future__ import annotations

import random
import warnings
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

from .clustered import effective_sample_size
from .intervals import wilson_share
from .text_probe import bag_of_words_classifier, has_words, top_features_of

__all__ = ["LeakRate", "leak_rate", "with_cues"]

#: The share of battles held out for the test.
TEST_SHARE = 0.3
#: Fewest held-out answers for a figure.
MIN_TEST_ANSWERS = 10
#: The words that most give each model away, kept per model.
TOP_WORDS = 5


@dataclass(frozen=True)
class LeakRate:
    """One leak-rate measurement (module docstring): ``accuracy`` on ``tested`` held-out answers of
    ``test_battles`` battles (trained on ``train_battles``), its 95% interval ``low``-``high``,
    ``chance``, ``models`` told apart, ``top_words`` ({model: the words that most predict it}). When the
    answers cannot be measured (one model, too few battles) the figures are None and ``reason`` says
    why."""

    accuracy: float | None
    low: float | None
    high: float | None
    chance: float | None
    tested: int
    models: int
    train_battles: int
    test_battles: int
    top_words: dict[str, list[str]] = field(default_factory=dict)
    reason: str = ""

    @property
    def leaks(self) -> bool:
        """True when the accuracy's interval lies above chance."""
        return self.low is not None and self.chance is not None and self.low > self.chance


#: The characters a finished sentence ends with (after trailing spaces and closing quotes or brackets).
_FINAL = set(".!?…。！？:;")


def with_cues(text: str) -> str:
    """``text`` and its length and ending as pseudo-words (module docstring): ``with_cues("Yes, it is.")``
    is ``"Yes, it is. length_2"``; an answer that stops mid-sentence also gets ``unfinished``."""
    words = len(text.split())
    cues = [f"length_{2 ** max(0, words.bit_length() - 1)}"]
    if text.rstrip().rstrip("\"')]}»”’*_`").strip()[-1:] not in _FINAL:
        cues.append("unfinished")
    return f"{text} {' '.join(cues)}"


def leak_rate(answers: Sequence[tuple[Hashable, str, Hashable]], *, seed: int = 0) -> LeakRate:
    """The leak rate (module docstring) of ``answers``: ``(battle, text, model)`` triples, two per battle
    (``battle`` any key: the arena gives a conversation's first turn, so its turns stay together);
    answers without a word (``core.text_probe.has_words``: empty, or spaces only) are left out."""
    kept = [(battle, with_cues(text), str(model)) for battle, text, model in answers if has_words(text)]
    battles = sorted({battle for battle, _, _ in kept}, key=str)
    random.Random(seed).shuffle(battles)
    held_out = set(battles[: round(len(battles) * TEST_SHARE)])
    train = [(text, model) for battle, text, model in kept if battle not in held_out]
    trained = Counter(model for _, model in train)
    test = [(battle, text, model) for battle, text, model in kept if battle in held_out and model in trained]
    figures = dict(tested=len(test), models=len(trained), train_battles=len(battles) - len(held_out))
    figures["test_battles"] = len({battle for battle, _, _ in test})
    if len(trained) < 2:
        why = (
            "no voted battle"
            if not kept
            else f"the training battles hold {len(trained)} model(s): nothing to tell apart"
        )
        return LeakRate(None, None, None, None, **figures, reason=why)
    if len(test) < MIN_TEST_ANSWERS:
        why = f"{len(test)} held-out answers (at least {MIN_TEST_ANSWERS} are needed: about {MIN_TEST_ANSWERS * 5 // 3} voted battles)"
        return LeakRate(None, None, None, None, **figures, reason=why)
    from threadpoolctl import threadpool_limits

    # One thread: the measurement shares the machine with the web (core.job_priority).
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence notes on tiny sets
        classifier = bag_of_words_classifier(seed)
        classifier.fit([text for text, _ in train], [model for _, model in train])
        guessed = classifier.predict([text for _, text, _ in test])
        top = top_features_of(classifier, TOP_WORDS)
    most_common = max(trained, key=lambda model: (trained[model], model))
    right: dict[Hashable, int] = Counter()
    tried: dict[Hashable, int] = Counter()
    for (battle, _, model), guess in zip(test, guessed, strict=True):
        right[battle] += str(guess) == model
        tried[battle] += 1
    accuracy = sum(right.values()) / len(test)
    order = list(tried)
    effective = effective_sample_size([right[b] for b in order], [tried[b] for b in order]) or len(test)
    low, high = wilson_share(accuracy, effective)
    chance = sum(model == most_common for _, _, model in test) / len(test)
    return LeakRate(accuracy, low, high, chance, **figures, top_words=top)
