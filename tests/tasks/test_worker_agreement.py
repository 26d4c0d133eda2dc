"""Agreement per validator and per annotator in a round (``validation.agreement``): by hand on a small
case, against the ``krippendorff`` package on random verdicts, and through the owners' API and page."""

from __future__ import annotations

import math
import random

import krippendorff
import numpy as np
import pytest

from annotation.exports import pseudonym
from tasks.round_stats import round_counts
from tests.factories.accounts import UserFactory
from tests.factories.annotation import make_example
from tests.factories.validation import GoldItemFactory, ValidationFactory
from tests.helpers.api import client_for
from validation.agreement import round_agreement
from validation.models import GoldAnswer

pytestmark = pytest.mark.django_db

A, B = "correct", "incorrect"


@pytest.fixture
def small_case(hate_round, owner):
    """Validators va, vb, vc; annotators x (e1, e2, an unvalidated e5) and y (e3, e4):

    e1 (x, validated_correct)   va A, vb A
    e2 (x, pending)             va A, vb B
    e3 (y, validated_incorrect) vb B, vc B
    e4 (y, validated_correct)   va A, vb A, vc B, and the owner's verdict A (out: it settles)

    plus a retracted example of x with votes (out) and a gold answer of vc on e1 (never a verdict).
    """
    va, vb, vc = (UserFactory(username=n) for n in ("va", "vb", "vc"))
    x, y = UserFactory(username="x"), UserFactory(username="y")
    e1 = make_example(hate_round, x, status="validated_correct")
    e2 = make_example(hate_round, x)
    e3 = make_example(hate_round, y, status="validated_incorrect")
    e4 = make_example(hate_round, y, status="validated_correct")
    make_example(hate_round, x)
    for example, votes in [(e1, [(va, A), (vb, A)]), (e2, [(va, A), (vb, B)]), (e3, [(vb, B), (vc, B)])]:
        for who, verdict in votes:
            ValidationFactory(example=example, validator=who, verdict=verdict)
    for who, verdict in [(va, A), (vb, A), (vc, B)]:
        ValidationFactory(example=e4, validator=who, verdict=verdict)
    ValidationFactory(example=e4, validator=owner, verdict=A, is_owner_verdict=True)
    retracted = make_example(hate_round, x, is_retracted=True)
    ValidationFactory(example=retracted, validator=va, verdict=B)
    ValidationFactory(example=retracted, validator=vc, verdict=A)
    gold = GoldItemFactory(example=e1, verdict="correct")
    GoldAnswer.objects.create(gold=gold, validator=vc, verdict=B, is_correct=False)
    return {"va": va, "vb": vb, "vc": vc, "x": x, "y": y}


def test_agreement_by_hand(hate_round, small_case):
    # Coincidences (Krippendorff 2011, nominal), a = correct, b = incorrect:
    # va on e1, e2, e4: o_aa = 2 + 0 + 1 = 3, o_ab = o_ba = 0 + 1 + 1 = 2; n_a = 5, n_b = 2, n = 7:
    #   alpha = 1 - 6 * 4 / (2 * 5 * 2) = -0.2
    # vb on all four units: the round's alpha, 0.2 (tests/tasks/test_round_agreement.py)
    # vc and y on e3, e4: o_bb = 2, o_aa = 1, o_ab = o_ba = 1; n_a = 2, n_b = 3, n = 5: 1 - 4 * 2 / 12 = 1/3
    # x on e1, e2 (e5 has no verdict): o_aa = 2, o_ab = o_ba = 1; n_a = 3, n_b = 1, n = 4: 1 - 3 * 2 / 6 = 0
    result = round_agreement(hate_round)
    ids = {k: u.pk for k, u in small_case.items()}
    by_validator = {v.user_id: v for v in result.validators}
    by_annotator = {a.user_id: a for a in result.annotators}
    assert result.alpha == pytest.approx(0.2) == pytest.approx(round_counts(hate_round).agreement)
    assert set(by_validator) == {ids["va"], ids["vb"], ids["vc"]}  # the owner verdict is no vote
    va, vb, vc = by_validator[ids["va"]], by_validator[ids["vb"]], by_validator[ids["vc"]]
    assert (va.votes, va.coded_units, va.alpha) == (3, 3, pytest.approx(-0.2))
    assert (vb.votes, vb.alpha) == (4, pytest.approx(0.2))
    assert (vc.votes, vc.alpha) == (2, pytest.approx(1 / 3))
    # Agreement with the outcome: va A on e1 and e4 (both validated_correct): 2 of 2; vb 3 of 3 (e2 is
    # pending); vc B on e3 (validated_incorrect) yes, B on e4 (validated_correct) no: 1 of 2.
    assert (va.agreeing, va.judged_settled, va.agreement) == (2, 2, 1.0)
    assert (vb.agreeing, vb.judged_settled) == (3, 3)
    assert (vc.agreeing, vc.judged_settled, vc.agreement) == (1, 2, 0.5)
    x, y = by_annotator[ids["x"]], by_annotator[ids["y"]]
    assert (x.examples, x.settled, x.validated_correct, x.correct_share, x.coded_units) == (3, 1, 1, 1.0, 2)
    assert x.alpha == pytest.approx(0.0)
    assert (y.examples, y.settled, y.validated_correct, y.correct_share) == (2, 2, 1, 0.5)
    assert y.alpha == pytest.approx(1 / 3)


def test_none_when_not_computable(hate_round, annotator, validator):
    lone = make_example(hate_round, annotator)
    ValidationFactory(example=lone, validator=validator, verdict=A)  # one coder only
    same = make_example(hate_round, annotator)
    ValidationFactory(example=same, validator=validator, verdict=A)
    ValidationFactory(example=same, verdict=A)  # two coders, one value: no variation
    result = round_agreement(hate_round)
    mine = next(v for v in result.validators if v.user_id == validator.pk)
    assert (result.alpha, mine.alpha, mine.agreement) == (None, None, None)
    assert (result.annotators[0].alpha, result.annotators[0].correct_share) == (None, None)


def _package_alpha(units: list[list[tuple[int, str]]], coders: list[int]) -> float:
    values = sorted({v for unit in units for _, v in unit})
    data = np.full((len(coders), len(units)), np.nan)
    for u, unit in enumerate(units):
        for coder, value in unit:
            data[coders.index(coder), u] = values.index(value)
    return krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")


@pytest.mark.parametrize("seed", range(3))
def test_per_person_alpha_equals_the_krippendorff_package(hate_round, seed):
    rng = random.Random(seed)
    validators = [UserFactory() for _ in range(5)]
    annotators = [UserFactory() for _ in range(3)]
    units: dict[int, list[tuple[int, str]]] = {}
    author: dict[int, int] = {}
    for _ in range(25):
        writer = rng.choice(annotators)
        example = make_example(hate_round, writer)
        author[example.pk] = writer.pk
        units[example.pk] = []
        for v in rng.sample(validators, rng.randint(1, 4)):
            verdict = rng.choice(["correct", "incorrect", "flagged"])
            ValidationFactory(example=example, validator=v, verdict=verdict)
            units[example.pk].append((v.pk, verdict))
    coders = [v.pk for v in validators]
    result = round_agreement(hate_round)
    compared = 0
    for row in result.validators:
        theirs = [unit for unit in units.values() if any(c == row.user_id for c, _ in unit)]
        if row.alpha is not None:
            assert math.isclose(row.alpha, _package_alpha(theirs, coders), abs_tol=1e-9)
            compared += 1
    for row in result.annotators:
        theirs = [unit for pk, unit in units.items() if author[pk] == row.user_id]
        if row.alpha is not None:
            assert math.isclose(row.alpha, _package_alpha(theirs, coders), abs_tol=1e-9)
            compared += 1
    assert compared >= 6


def test_the_api_and_page_show_pseudonyms_to_owners_only(client, hate_round, small_case, owner, password):
    url = "/api/tasks/hate-speech/rounds/1/agreement/"
    body = client_for(owner).get(url).json()
    va = pseudonym(hate_round.pk, small_case["va"].pk)
    vc = pseudonym(hate_round.pk, small_case["vc"].pk)
    rows = {r["validator"]: r for r in body["validators"]}
    assert body["round"] == 1 and body["alpha"] == pytest.approx(0.2)
    assert rows[va]["alpha"] == pytest.approx(-0.2) and rows[va]["agreement"] == 1.0
    assert (rows[vc]["gold_answered"], rows[vc]["gold_correct"], rows[vc]["gold_accuracy"]) == (1, 0, 0.0)
    assert rows[va]["gold_accuracy"] is None
    assert {r["annotator"] for r in body["annotators"]} == {
        pseudonym(hate_round.pk, small_case["x"].pk),
        pseudonym(hate_round.pk, small_case["y"].pk),
    }
    names = {u.username for u in small_case.values()}
    shown = {r["validator"] for r in body["validators"]} | {r["annotator"] for r in body["annotators"]}
    assert len(shown) == 5 and not names & shown
    assert client_for(small_case["va"]).get(url).status_code == 403
    assert client_for(None).get(url).status_code == 401
    assert client_for(owner).get("/api/tasks/hate-speech/rounds/9/agreement/").status_code == 404

    client.login(username="owner", password=password)
    page = client.get("/tasks/hate-speech/rounds/1/quality/")
    assert page.status_code == 200
    text = page.content.decode()
    assert va in text and "-0.200" in text and "0 of 1 (0%)" in text
    assert "/tasks/hate-speech/rounds/1/quality/" in client.get("/tasks/hate-speech/").content.decode()
    client.logout()
    client.force_login(small_case["va"])
    assert client.get("/tasks/hate-speech/rounds/1/quality/").status_code == 404
    assert "/rounds/1/quality/" not in client.get("/tasks/hate-speech/").content.decode()
