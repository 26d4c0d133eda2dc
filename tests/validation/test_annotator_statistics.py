"""Per-annotator statistics, with every figure computed by hand in the comments."""

from __future__ import annotations

from tasks.services import ensure_round
from tests.factories.annotation import make_example
from tests.factories.validation import submit_served
from validation import selectors


def _vote(example, user, verdict, **kw):
    submit_served(example=example, validator=user, verdict=verdict, **kw)


def test_annotator_round_stats(hate_task, hate_round, annotator, validator, outsider, owner, crowd):
    v1, v2, v3 = crowd
    e1 = make_example(hate_round, annotator)  # fooling, settled validated_correct → verified
    e2 = make_example(hate_round, annotator)  # fooling, settled validated_incorrect
    make_example(hate_round, annotator, model_wrong=False)  # not fooling, never validated
    make_example(hate_round, annotator, is_retracted=True)  # retracted: counts nowhere
    e5 = make_example(hate_round, outsider)  # settled correct by the owner

    for user in (validator, v1, v2):
        _vote(e1, user, "correct")
    _vote(e2, validator, "correct")
    for user in (v1, v2, v3):
        _vote(e2, user, "incorrect")
    _vote(e5, validator, "incorrect")
    _vote(e5, owner, "correct", owner_mode=True)

    round2 = ensure_round(task=hate_task, number=2)
    make_example(round2, validator)

    stats = {(s.user_id, s.round_number): s for s in selectors.annotator_round_stats(hate_task)}
    a = stats[(annotator.pk, 1)]
    # submitted: e1, e2, e3 (e4 retracted); fooling: e1, e2; verified: e1.
    assert (a.submitted, a.fooling, a.verified_fooling, a.validations, a.agreement) == (3, 2, 1, 0, None)
    val = stats[(validator.pk, 1)]
    # validator: e1 correct (settled correct: agrees), e2 correct (settled incorrect: disagrees),
    # e5 incorrect (owner settled correct: disagrees) → 1 of 3.
    assert (val.submitted, val.validations, val.judged_settled, val.agreeing) == (0, 3, 3, 1)
    assert val.agreement == 1 / 3
    # v1: e1 correct (agrees), e2 incorrect (agrees) → 2 of 2.
    assert (stats[(v1.pk, 1)].validations, stats[(v1.pk, 1)].agreement) == (2, 1.0)
    # The owner verdict counts as a validation given but is left out of agreement.
    o = stats[(owner.pk, 1)]
    assert (o.validations, o.judged_settled, o.agreement) == (1, 0, None)
    # outsider wrote e5 (fooling, settled correct → verified) and validated nothing.
    assert (stats[(outsider.pk, 1)].submitted, stats[(outsider.pk, 1)].verified_fooling) == (1, 1)
    assert (stats[(validator.pk, 2)].submitted, stats[(validator.pk, 2)].fooling) == (1, 1)

    mine = selectors.annotator_round_stats(hate_task, user=validator)
    assert [(s.round_number, s.validations, s.submitted) for s in mine] == [(1, 3, 0), (2, 0, 1)]


def test_pending_verdicts_are_not_in_agreement(hate_round, annotator, validator, hate_task):
    e = make_example(hate_round, annotator)
    _vote(e, validator, "correct")
    [row] = selectors.annotator_round_stats(hate_task, user=validator)
    assert (row.validations, row.judged_settled, row.agreement) == (1, 0, None)
