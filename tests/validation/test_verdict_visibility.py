"""A verdict on an example the sender may not see is answered exactly as one on an id that does not exist.

The rule is ``validation.selectors.verdict_examples`` (docs/domain.md, "Visibility"): what
``GET /api/examples/{id}/`` shows the user (``annotation.selectors.examples_visible_to``), plus the
examples open for validation, those they voted on and the one they hold a claim on. Everyone else is
told nothing of an example's state: not that it was retracted, is not open, or is already settled.
"""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation.models import Example
from annotation.services import retract_example
from tests.factories.accounts import UserFactory
from tests.factories.annotation import make_example
from tests.factories.validation import submit_served
from validation.models import Validation, ValidationClaim
from validation.services import next_example, submit_validation

pytestmark = pytest.mark.django_db

PAGE = reverse("validation:validate", args=["hate-speech"])
NO_SUCH_ID = 987_654_321


def _post(client, example_id, **body):
    return client.post(f"/api/examples/{example_id}/validations/", body, format="json")


def _answer(response):
    return response.status_code, response.json()


HIDDEN_STATES = {
    "retracted": {"is_retracted": True},
    "not open (not model-fooling)": {"model_wrong": False},
    "settled": {"status": "validated_correct"},
    "settled as flagged": {"status": "flagged"},
    "imported": {"source": "imported", "status": "validated_correct"},
}


@pytest.fixture(params=list(HIDDEN_STATES))
def hidden(request, hate_round, annotator):
    """An example in a state a stranger may not learn (one per state)."""
    return make_example(hate_round, annotator, **HIDDEN_STATES[request.param])


def test_api_answers_a_stranger_as_for_an_unknown_id(api, hidden, outsider):
    unknown = _answer(_post(api(outsider), NO_SUCH_ID, verdict="correct"))
    assert unknown == (404, {"detail": "No such example."})
    assert _answer(_post(api(outsider), hidden.pk, verdict="correct")) == unknown
    # Whatever the body: an invalid one is not checked before the example is found either.
    assert _answer(_post(api(outsider), hidden.pk, verdict="maybe")) == _answer(
        _post(api(outsider), NO_SUCH_ID, verdict="maybe")
    )
    # The same rule as reading it: GET /api/examples/{id}/ is a 404 for them too.
    assert api(outsider).get(f"/api/examples/{hidden.pk}/").status_code == 404
    assert not Validation.objects.exists()


def _page(response) -> tuple[int, str]:
    """Status and text, without the CSRF token (masked afresh in every response)."""
    return response.status_code, re.sub(r'name="csrfmiddlewaretoken" value="\w+"', "", response.text)


def test_validate_page_answers_a_stranger_as_for_an_unknown_id(client, hidden, outsider, password):
    client.login(username=outsider.username, password=password)
    unknown = client.post(PAGE, {"example": NO_SUCH_ID, "verdict": "correct", "round": 1})
    assert unknown.status_code == 404
    response = client.post(PAGE, {"example": hidden.pk, "verdict": "correct", "round": 1})
    assert _page(response) == _page(unknown)
    assert not Validation.objects.exists()


@pytest.mark.parametrize("who", ["owner", "superuser"])
def test_owners_and_superusers_are_told_the_state(api, hate_round, annotator, request, who):
    user = request.getfixturevalue("owner") if who == "owner" else UserFactory(is_superuser=True)
    retracted = make_example(hate_round, annotator, is_retracted=True)
    closed = make_example(hate_round, annotator, model_wrong=False)
    settled = make_example(hate_round, annotator, status="validated_correct")
    for example, message in (
        (retracted, "This example was retracted by its author."),
        (closed, "This example is not open for validation."),
        (settled, "This example is already settled (validated correct)."),
    ):
        assert _answer(_post(api(user), example.pk, verdict="correct")) == (
            409,
            {"detail": message},
        )


def test_the_author_is_told_it_is_their_own(api, hate_round, annotator):
    retracted = make_example(hate_round, annotator, is_retracted=True)
    response = _post(api(annotator), retracted.pk, verdict="correct")
    assert (response.status_code, response.json()["detail"]) == (403, "You cannot validate your own example.")


def test_an_open_example_never_served_to_the_sender_answers_as_a_missing_id(
    api, hate_round, annotator, outsider
):
    # Open examples are what the queue serves anyone, but until one is served to them its id must tell
    # them nothing (found by a tester: a 403 here against a 404 for a missing id listed pending ids).
    example = make_example(hate_round, annotator)
    refused = _answer(_post(api(outsider), example.pk, verdict="correct"))
    assert refused == _answer(_post(api(outsider), 987_654_321, verdict="correct"))
    assert refused[0] == 404
    undo = api(outsider).delete(f"/api/examples/{example.pk}/validations/mine/")
    missing = api(outsider).delete("/api/examples/987654321/validations/mine/")
    assert (
        (undo.status_code, undo.json())
        == (missing.status_code, missing.json())
        == (404, {"detail": "No such example."})
    )
    assert not Validation.objects.exists()


def test_a_served_validator_hears_that_it_was_retracted_meanwhile(api, hate_round, annotator, validator):
    example = make_example(hate_round, annotator)
    assert next_example(round_=hate_round, validator=validator) == example
    retract_example(example=example, user=annotator)
    assert _answer(_post(api(validator), example.pk, verdict="correct")) == (
        409,
        {"detail": "This example was retracted by its author."},
    )


def test_a_served_validator_hears_that_it_was_settled_meanwhile(api, hate_round, annotator, validator, owner):
    example = make_example(hate_round, annotator)
    assert next_example(round_=hate_round, validator=validator) == example
    # While they hold its claim nobody else is served it: an owner verdict settles it meanwhile.
    submit_validation(example=example, validator=owner, verdict="incorrect", owner_mode=True)
    # Their expired claim still says they were served it; nobody else can take it over now.
    ValidationClaim.objects.update(expires_at=timezone.now() - timedelta(hours=1))
    assert _answer(_post(api(validator), example.pk, verdict="correct")) == (
        409,
        {"detail": "This example is already settled (validated incorrect)."},
    )
    # Asking for the next example drops that claim; then they are a stranger to it like anyone else.
    assert next_example(round_=hate_round, validator=validator) is None
    assert _answer(_post(api(validator), example.pk, verdict="correct")) == (
        404,
        {"detail": "No such example."},
    )


def test_a_claim_taken_over_by_another_no_longer_shows_the_example(
    api, hate_round, annotator, validator, outsider
):
    example = make_example(hate_round, annotator)
    next_example(round_=hate_round, validator=validator)
    ValidationClaim.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    assert next_example(round_=hate_round, validator=outsider) == example
    Example.objects.filter(pk=example.pk).update(status="flagged")
    assert _answer(_post(api(validator), example.pk, verdict="correct")) == (
        404,
        {"detail": "No such example."},
    )
    assert _post(api(outsider), example.pk, verdict="correct").status_code == 409


def test_a_voter_hears_their_own_second_verdict_and_a_late_one(api, hate_round, annotator, validator, crowd):
    example = make_example(hate_round, annotator)
    assert next_example(round_=hate_round, validator=validator) == example
    assert _post(api(validator), example.pk, verdict="correct").status_code == 201
    again = _post(api(validator), example.pk, verdict="incorrect")
    assert _answer(again) == (409, {"detail": "You have already validated this example."})
    for user in crowd[:2]:
        submit_served(example=example, validator=user, verdict="correct")
    late = _post(api(validator), example.pk, verdict="incorrect")
    assert _answer(late) == (409, {"detail": "This example is already settled (validated correct)."})


def test_validate_page_keeps_the_second_tab_message_for_the_voter(
    client, hate_round, annotator, validator, crowd, password
):
    example = make_example(hate_round, annotator)
    client.login(username=validator.username, password=password)
    client.get(PAGE)
    client.post(PAGE, {"example": example.pk, "verdict": "correct", "round": 1})
    for user in crowd[:2]:
        submit_served(example=example, validator=user, verdict="correct")
    page = client.post(PAGE, {"example": example.pk, "verdict": "incorrect", "round": 1}, follow=True)
    assert f"Example {example.pk} was settled before your verdict; nothing was recorded." in page.text


def test_validate_page_tells_a_served_validator_it_was_retracted(
    client, hate_round, annotator, validator, password
):
    example = make_example(hate_round, annotator)
    client.login(username=validator.username, password=password)
    assert f'name="example" value="{example.pk}"' in client.get(PAGE).text
    retract_example(example=example, user=annotator)
    page = client.post(PAGE, {"example": example.pk, "verdict": "correct", "round": 1}, follow=True)
    assert page.status_code == 200
    assert "This example was retracted by its author." in page.text


API_ACTIONS = {
    "read": ("get", "/api/examples/{id}/", None),
    "verdict": ("post", "/api/examples/{id}/validations/", {"verdict": "correct"}),
    "undo a verdict": ("delete", "/api/examples/{id}/validations/mine/", None),
    "retract": ("post", "/api/examples/{id}/retract/", None),
    "flag": ("post", "/api/examples/{id}/flag/", {"reason": "looks wrong"}),
}


@pytest.mark.parametrize("action", list(API_ACTIONS))
def test_every_example_endpoint_answers_a_stranger_as_for_an_unknown_id(api, hidden, outsider, action):
    """Whatever the endpoint, someone else's example the sender may not see (retracted, not open,
    settled, imported) answers exactly what an id that never existed answers: no state leaks."""
    method, url, body = API_ACTIONS[action]
    client = api(outsider)

    def answer(example_id):
        response = getattr(client, method)(url.format(id=example_id), body, format="json")
        return response.status_code, response.json()

    assert answer(hidden.pk) == answer(NO_SUCH_ID)
    assert answer(NO_SUCH_ID)[0] == 404
    hidden.refresh_from_db()
    assert not hidden.is_flagged_by_annotator
    assert not Validation.objects.exists()
