"""Validator agreement per round: Krippendorff's alpha (nominal) over the ordinary verdicts, checked
against a hand computation and against the independent ``krippendorff`` package."""

from __future__ import annotations

import math
import random

import krippendorff
import numpy as np
import pytest

from core.metrics import krippendorff_alpha_nominal
from tasks.round_stats import round_counts
from tests.factories.accounts import UserFactory
from tests.factories.annotation import make_example
from tests.factories.validation import ValidationFactory

# Four units; by hand (Krippendorff 2011, nominal): coincidences o_aa = 2 + 1 = 3, o_ab = o_ba = 1 + 1 = 2,
# o_bb = 2; n_a = 5, n_b = 4, n = 9; alpha = 1 - (n - 1) * (o_ab + o_ba) / (2 * n_a * n_b)
# = 1 - 8 * 4 / 40 = 0.2.
HAND_UNITS = [["a", "a"], ["a", "b"], ["b", "b"], ["a", "a", "b"]]


def test_alpha_by_hand():
    assert krippendorff_alpha_nominal(HAND_UNITS) == pytest.approx(0.2)


def test_alpha_is_undefined_without_pairs_or_variation():
    assert krippendorff_alpha_nominal([]) is None
    assert krippendorff_alpha_nominal([["a"], ["b"]]) is None  # nothing pairable
    assert krippendorff_alpha_nominal([["a", "a"], ["a", "a", "a"]]) is None  # no variation
    assert krippendorff_alpha_nominal([["a", "a"], ["b", "b"]]) == 1.0
    assert krippendorff_alpha_nominal([["a", "b"], ["b", "a"]]) == pytest.approx(-0.5)  # 1 - 3*4/8


def _package_alpha(units: list[list[str]], coders: int) -> float:
    values = sorted({v for unit in units for v in unit})
    data = np.full((coders, len(units)), np.nan)
    for u, unit in enumerate(units):
        for c, value in enumerate(unit):
            data[c, u] = values.index(value)
    return krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")


@pytest.mark.parametrize("seed", range(5))
def test_alpha_equals_the_krippendorff_package_on_random_verdicts(seed):
    rng = random.Random(seed)
    units = [
        [rng.choice(["correct", "incorrect", "flagged"]) for _ in range(rng.randint(1, 5))] for _ in range(40)
    ]
    ours = krippendorff_alpha_nominal(units)
    assert ours is not None and math.isclose(ours, _package_alpha(units, 5), abs_tol=1e-9)


@pytest.mark.django_db
def test_round_statistics_carry_the_agreement_of_ordinary_verdicts(hate_round, annotator):
    letters = {"a": "correct", "b": "incorrect"}
    for unit in HAND_UNITS:
        example = make_example(hate_round, annotator)
        for value in unit:
            ValidationFactory(example=example, verdict=letters[value])
    # An owner verdict does not code: it would change alpha if it were counted.
    owner_settled = make_example(hate_round, annotator)
    ValidationFactory(example=owner_settled, verdict="correct")
    ValidationFactory(
        example=owner_settled, verdict="incorrect", is_owner_verdict=True, validator=UserFactory()
    )
    # A retracted example's votes are out, as the example is.
    retracted = make_example(hate_round, annotator, is_retracted=True)
    ValidationFactory(example=retracted, verdict="correct")
    ValidationFactory(example=retracted, verdict="incorrect")
    assert round_counts(hate_round).agreement == pytest.approx(0.2)


@pytest.mark.django_db
def test_task_page_shows_the_agreement(client, hate_round, annotator):
    for unit in HAND_UNITS:
        example = make_example(hate_round, annotator)
        for value in unit:
            ValidationFactory(example=example, verdict={"a": "correct", "b": "incorrect"}[value])
    page = client.get("/tasks/hate-speech/").content.decode()
    assert "Validator agreement on verdicts (α)" in page
    assert "<td>0.20</td>" in page
