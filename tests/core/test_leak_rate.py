"""The arena's leak rate (core/leak_rate.py): the naive Bayes classifier worked by hand on a tiny set,
the split by battle, chance as the most common model, and simulated models that can and cannot be told
apart."""

from __future__ import annotations

import math
import random

import pytest

from core.intervals import wilson_interval
from core.leak_rate import MIN_TEST_ANSWERS, _NaiveBayes, leak_rate, words


def test_words_keep_punctuation_marks():
    assert words("**Yes**, 42!") == ["*", "*", "yes", "*", "*", ",", "42", "!"]
    assert words("Ünïcode – 🙂") == ["ünïcode", "–", "🙂"]


def test_naive_bayes_by_hand():
    """Training: x wrote "a a b" and "a c", y wrote "b b". Vocabulary {a, b, c} (3 words); x has 5 words,
    y 2, so P(w | x) = (count + 1) / 8 and P(w | y) = (count + 1) / 5; P(x) = 2/3. For "a b": x scores
    log(2/3) + log(4/8) + log(2/8) = -2.48, y log(1/3) + log(1/5) + log(3/5) = -3.22: x. For "b" alone:
    x log(2/3) + log(2/8) = -1.79, y log(1/3) + log(3/5) = -1.61: y. A word never seen ("z") says
    nothing."""
    nb = _NaiveBayes([(["a", "a", "b"], "x"), (["a", "c"], "x"), (["b", "b"], "y")])
    assert nb.log_scores(["a", "b"]) == pytest.approx(
        {
            "x": math.log(2 / 3) + math.log(4 / 8) + math.log(2 / 8),
            "y": math.log(1 / 3) + math.log(1 / 5) + math.log(3 / 5),
        }
    )
    assert nb.predict(["a", "b"]) == "x"
    assert nb.log_scores(["b", "z"]) == pytest.approx(
        {"x": math.log(2 / 3) + math.log(2 / 8), "y": math.log(1 / 3) + math.log(3 / 5)}
    )
    assert nb.predict(["b"]) == "y" and nb.predict(["b", "z"]) == "y"
    assert nb.most_common == "x"
    # Level scores go to the first model by name.
    assert _NaiveBayes([(["a"], "y"), (["a"], "x")]).predict(["a"]) == "x"


def _battles(n, seed, *, tell):
    """``n`` battles of two models; with ``tell``, model "p" ends every answer with "arr" (a pirate) and
    "q" never does; without it both draw from the same words."""
    rng = random.Random(seed)
    vocabulary = "the river is long and wide with water fish boat".split()
    answers = []
    for battle in range(n):
        for model in ("p", "q"):
            text = " ".join(rng.choice(vocabulary) for _ in range(8))
            if tell and model == "p":
                text += " arr!"
            answers.append((battle, text, model))
    return answers


def test_models_that_can_be_told_apart_and_models_that_cannot():
    told = leak_rate(_battles(100, 1, tell=True))
    assert told.test_battles == 30 and told.train_battles == 70 and told.tested == 60
    assert told.accuracy == 1.0 and told.chance == pytest.approx(0.5) and told.leaks
    assert (told.low, told.high) == pytest.approx(wilson_interval(60, 60))
    same = leak_rate(_battles(100, 1, tell=False))
    assert same.low <= same.chance <= same.high and not same.leaks
    assert same.accuracy == pytest.approx(round(same.accuracy * 60) / 60)


def test_both_answers_of_a_battle_fall_on_one_side_of_the_split():
    answers = _battles(40, 2, tell=True)
    seen = {}
    for seed in range(5):
        found = leak_rate(answers, seed=seed)
        assert found.tested == 2 * found.test_battles  # two answers per held-out battle, never one
        seen[seed] = found.test_battles
    assert set(seen.values()) == {12}


def test_too_few_battles_or_models_give_no_figure():
    few = leak_rate(_battles(10, 3, tell=True))  # 3 held-out battles: 6 answers
    assert few.tested == 6 < MIN_TEST_ANSWERS and few.accuracy is None and not few.leaks
    one_model = leak_rate([(b, t, "p") for b, t, _ in _battles(50, 3, tell=True)])
    assert one_model.models == 1 and one_model.accuracy is None
    assert leak_rate([]).accuracy is None
    with pytest.raises(ValueError):
        leak_rate([], test_share=1.0)
