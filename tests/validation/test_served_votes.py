"""A verdict counts only on an example served to its validator (issue 29).

The rule is ``validation.services.submit_validation``'s (docs/domain.md, "Validation queue"): the
validator holds the example's claim (``ValidationClaim``, or a ``GoldClaim`` for a gold item), live or
run out less than ``DYNABENCH_VALIDATION_GRACE_SECONDS`` ago, not taken over by another validator since.
Anything else is refused (code ``not_served``, 403 in the API) and nothing is stored; owner verdicts
are not votes and need no serving.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation.models import Example
from tests.factories.annotation import make_example
from tests.factories.validation import GoldItemFactory, serve_as_gold
from validation.models import GoldAnswer, Validation, ValidationClaim

pytestmark = pytest.mark.django_db

NEXT = "/api/tasks/hate-speech/validations/next/"
PAGE = reverse("validation:validate", args=["hate-speech"])
NOT_SERVED = (
    "A verdict counts only on an example served to you for validation, and this one is not (or no "
    "longer) reserved for you; nothing was recorded. Ask for the next example to validate."
)
NOT_FOUND = {"detail": "No such example."}


@pytest.fixture(autouse=True)
def _ten_minutes_of_grace(settings):
    settings.DYNABENCH_VALIDATION_CLAIM_SECONDS = 600
    settings.DYNABENCH_VALIDATION_GRACE_SECONDS = 600


def _post(client, example_id, **body):
    return client.post(f"/api/examples/{example_id}/validations/", body, format="json")


def _nothing_stored(example):
    example.refresh_from_db()
    return example.status == "pending" and not Validation.objects.exists() and not GoldAnswer.objects.exists()


def test_a_colluding_verdict_on_an_example_never_served_is_refused(api, hate_round, make_user):
    # Participants A and B each wrote an example; A sends a verdict on B's by its id, never served it.
    a, b = make_user("a"), make_user("b")
    make_example(hate_round, a)
    bs = make_example(hate_round, b)
    refused = _post(api(a), bs.pk, verdict="correct")
    assert (refused.status_code, refused.json()) == (404, NOT_FOUND)
    assert _nothing_stored(bs)
    # The answer names no state of the example: it is the same while another validator, C, holds its
    # claim, and the same for an id that does not exist (so ids cannot be probed for pending examples).
    c = make_user("c")
    assert api(c).get(NEXT).json()["example"]["id"] in {bs.pk, Example.objects.get(annotator=a).pk}
    ValidationClaim.objects.filter(validator=c).update(example=bs)
    again = _post(api(a), bs.pk, verdict="correct")
    assert (again.status_code, again.json()) == (404, NOT_FOUND)
    assert _nothing_stored(bs)
    missing = _post(api(a), 987_654_321, verdict="correct")
    assert (missing.status_code, missing.json()) == (404, NOT_FOUND)
    # A body the endpoint would refuse changes nothing: the id is looked up first.
    assert _post(api(a), bs.pk, verdict="maybe").json() == _post(api(a), 987_654_321, verdict="maybe").json()


def test_the_same_answer_through_the_validate_page(client, hate_round, make_user, password):
    a, b = make_user("a"), make_user("b")
    bs = make_example(hate_round, b)
    assert client.login(username=a.username, password=password)
    for example_id in (bs.pk, 987_654_321):  # the same 404 for an unserved example and a missing id
        page = client.post(PAGE, {"example": example_id, "verdict": "correct", "round": 1})
        assert page.status_code == 404
    assert _nothing_stored(bs)


def test_a_verdict_on_the_example_the_api_served_counts(api, hate_round, annotator, validator):
    example = make_example(hate_round, annotator)
    served = api(validator).get(NEXT).json()["example"]["id"]
    assert served == example.pk
    recorded = _post(api(validator), example.pk, verdict="correct")
    assert recorded.status_code == 201
    assert list(Validation.objects.values_list("example", "validator", "verdict")) == [
        (example.pk, validator.pk, "correct")
    ]


@pytest.mark.parametrize(
    ("expired_minutes_ago", "counts"),
    [(-5, True), (9, True), (11, False)],  # live; ran out 9 minutes ago (< 10); 11 minutes ago
)
def test_a_claim_counts_until_ten_minutes_after_it_ran_out(
    api, hate_round, annotator, validator, expired_minutes_ago, counts
):
    example = make_example(hate_round, annotator)
    assert api(validator).get(NEXT).json()["example"]["id"] == example.pk
    ValidationClaim.objects.filter(example=example).update(
        expires_at=timezone.now() - timedelta(minutes=expired_minutes_ago)
    )
    response = _post(api(validator), example.pk, verdict="correct")
    if counts:
        assert response.status_code == 201 and Validation.objects.count() == 1
    else:
        assert (response.status_code, response.json()) == (403, {"detail": NOT_SERVED})
        assert _nothing_stored(example)


def test_a_claim_taken_over_by_another_validator_no_longer_counts(
    api, hate_round, annotator, validator, outsider
):
    example = make_example(hate_round, annotator)
    assert api(validator).get(NEXT).json()["example"]["id"] == example.pk
    ValidationClaim.objects.filter(example=example).update(expires_at=timezone.now() - timedelta(minutes=1))
    assert api(outsider).get(NEXT).json()["example"]["id"] == example.pk  # the claim passes on
    # Their claim is the outsider's now: the late verdict gets the answer of any unserved id.
    late = _post(api(validator), example.pk, verdict="incorrect")
    assert (late.status_code, late.json()) == (404, NOT_FOUND)
    assert _post(api(outsider), example.pk, verdict="correct").status_code == 201
    assert list(Validation.objects.values_list("validator", "verdict")) == [(outsider.pk, "correct")]


def test_a_gold_item_counts_only_while_its_gold_claim_does(api, hate_round, annotator, make_user):
    gold = GoldItemFactory(example=make_example(hate_round, annotator), verdict="correct")
    fresh, stale = make_user("fresh"), make_user("stale")
    serve_as_gold(gold, fresh)
    serve_as_gold(gold, stale, minutes=-11)  # ran out 11 minutes ago
    assert _post(api(fresh), gold.example_id, verdict="correct").status_code == 201
    refused = _post(api(stale), gold.example_id, verdict="correct")
    assert (refused.status_code, refused.json()) == (403, {"detail": NOT_SERVED})
    assert list(GoldAnswer.objects.values_list("validator", flat=True)) == [fresh.pk]
    assert not Validation.objects.exists()
    assert Example.objects.get(pk=gold.example_id).status == "pending"


def test_owner_verdicts_need_no_serving(api, hate_round, annotator, owner):
    example = make_example(hate_round, annotator)
    settled = _post(api(owner), example.pk, verdict="incorrect", owner_mode=True)
    assert settled.status_code == 201 and settled.json()["example_status"] == "validated_incorrect"
    # An owner's ordinary vote is a vote like anyone's: served first.
    other = make_example(hate_round, annotator)
    refused = _post(api(owner), other.pk, verdict="correct")
    assert (refused.status_code, refused.json()) == (403, {"detail": NOT_SERVED})
