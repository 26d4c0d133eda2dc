"""The arena's leak rate (core/leak_rate.py) with the text probe's bag of words: battles held out whole,
chance as the most common model, the interval on battles, the words that give a model away, simulated
models that can and cannot be told apart, and answers too few to measure."""

from __future__ import annotations

import random

import pytest

from core.intervals import wilson_share
from core.leak_rate import leak_rate


def _battles(n, seed, *, tell):
    """``n`` battles of two models answering one prompt each (the prompt's words in both answers); with
    ``tell``, model "p" ends every answer with "arr!" (a pirate) and "q" never does."""
    rng = random.Random(seed)
    vocabulary = "the river is long and wide with water fish boat".split()
    answers = []
    for battle in range(n):
        topic = f"topic{battle}"
        for model in ("p", "q"):
            text = f"{topic} " + " ".join(rng.choice(vocabulary) for _ in range(8))
            if tell and model == "p":
                text += " arr!"
            answers.append((battle, text, model))
    return answers


def test_a_model_with_a_tell_is_told_apart_by_its_words():
    """60 battles: 18 held out (30%), 36 answers. All guessed right: every battle 2 of 2, so the rate is
    1 and Kish's effective sample size is the 36 answers (no spread between battles): Wilson on 36."""
    told = leak_rate(_battles(60, 1, tell=True))
    assert (told.tested, told.test_battles, told.train_battles, told.models) == (36, 18, 42, 2)
    assert told.accuracy == 1.0 and told.chance == pytest.approx(0.5) and told.leaks
    assert (told.low, told.high) == pytest.approx(wilson_share(1.0, 36))
    assert "arr" in told.top_words["p"] and told.reason == ""


def test_models_that_cannot_be_told_apart_stay_near_chance():
    """Each battle's two answers share its prompt's word ("topic<n>"); held out together, that word is
    never seen in training, so it cannot carry the guess, and the interval covers chance."""
    same = leak_rate(_battles(60, 1, tell=False))
    assert same.low <= same.chance <= same.high and not same.leaks


def test_the_interval_counts_battles_when_their_answers_go_together():
    """In two battles of three "p" writes "arr" and "q" plain; in the third they swap. The classifier
    learns "arr" means p, so each held-out battle is guessed 2 of 2 or 0 of 2: its answers go together.
    Kish's effective size of m battles whose rates r_i are all 0 or 1 is R(1 - R) / V with
    V = m / (m - 1) * sum (2 r_i - 2R)^2 / (2m)^2 = R(1 - R) / (m - 1): m - 1 battles, not 2m answers."""
    answers = []
    for battle in range(60):
        arr, plain = ("p", "q") if battle % 3 else ("q", "p")
        answers += [(battle, f"talk {battle} arr!", arr), (battle, f"talk {battle} plain", plain)]
    found = leak_rate(answers)
    assert found.test_battles == 18 and found.tested == 36 and 0 < found.accuracy < 1
    assert round(found.accuracy * 36) % 2 == 0  # whole battles right or wrong
    assert (found.low, found.high) == pytest.approx(wilson_share(found.accuracy, found.test_battles - 1))
    narrow = wilson_share(found.accuracy, found.tested)  # answers counted as independent
    assert found.high - found.low > narrow[1] - narrow[0]


def test_too_few_answers_or_one_model_give_no_figure_but_a_reason():
    one_model = leak_rate([(b, t, "p") for b, t, _ in _battles(10, 3, tell=True)])
    assert (
        one_model.accuracy is None and one_model.models == 1 and "nothing to tell apart" in one_model.reason
    )
    few = leak_rate(_battles(10, 3, tell=True))  # 3 held-out battles: 6 answers
    assert few.accuracy is None and few.tested == 6 and "6 held-out answers (at least 10" in few.reason
    blank = leak_rate([(1, "   ", "p"), (1, "", "q")])
    assert blank.accuracy is None and blank.tested == 0 and blank.reason == "no voted battle"
    assert leak_rate([]).accuracy is None and not leak_rate([]).leaks


def test_length_and_an_unfinished_ending_are_cues():
    from core.leak_rate import with_cues

    assert with_cues("Yes, it is.") == "Yes, it is. length_2"  # 3 words: the power of two below is 2
    assert (
        with_cues("You cannot cook without a plate. You")
        == "You cannot cook without a plate. You length_4 unfinished"
    )
    assert with_cues('He said "done!"') == 'He said "done!" length_2'
    # Two models of the same words, one short and one long: told apart by length alone.
    rng = random.Random(5)
    words = "the river is long and wide with water fish boat".split()
    answers = [
        (b, " ".join(rng.choice(words) for _ in range(n)) + ".", model)
        for b in range(60)
        for model, n in (("short", 4), ("long", 40))
    ]
    found = leak_rate(answers)
    assert found.accuracy == 1.0 and found.leaks
    assert "length_4" in found.top_words["short"] and "length_32" in found.top_words["long"]
