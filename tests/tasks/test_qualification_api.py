"""The qualification rules through the API: 403 ``{"detail", "code", "url"}`` on examples and
validations; the owners' workers API (list, read, PUT/PATCH listing and hold, 400 field messages)."""

from __future__ import annotations

import pytest

from annotation.models import Example
from tasks import qualification
from tests.factories.annotation import make_example
from tests.factories.qualification import MESSAGES, URLS, make_quiz, refuse, standing
from tests.factories.validation import serve

pytestmark = pytest.mark.django_db

EXAMPLES = "/api/tasks/hate-speech/examples/"
NEXT = "/api/tasks/hate-speech/validations/next/"
WORKERS = "/api/tasks/hate-speech/workers/"
BODY = {"statement": "I hate rainy mondays 🌧", "label": "not-hateful"}


@pytest.mark.parametrize("code", qualification.CODES)
def test_each_rule_answers_403_with_code_message_and_url(code, api, hate_task, hate_round, annotator):
    refuse(code, hate_task, hate_round, annotator)
    before = Example.objects.count()
    response = api(annotator).post(EXAMPLES, BODY, format="json")
    assert response.status_code == 403
    assert response.json() == {"detail": MESSAGES[code], "code": code, "url": URLS.get(code)}
    assert Example.objects.count() == before


VALIDATE_MESSAGES = {
    **MESSAGES,
    "daily_cap": (
        "You have validated 1 example today, this task's daily limit; you can validate again after 00:00 UTC."
    ),
}


def _refuse_validating(code, task, round_, user, annotator):
    if code == "daily_cap":
        task.daily_validation_cap = 1
        task.save(update_fields=["daily_validation_cap"])
        done = make_example(round_, annotator)
        done.validations.create(validator=user, verdict="correct")
    else:
        refuse(code, task, round_, user)


@pytest.mark.parametrize("code", ["blocked", "not_allowed", "held", "quiz", "daily_cap"])
def test_validating_is_refused_with_code(code, api, hate_task, hate_round, annotator, validator):
    example = make_example(hate_round, annotator)
    # Served to them before the rule refused them: an example never served answers 404 whatever the
    # rules (test_verdict_visibility.py); here the rule's refusal is what is tested.
    serve(example, validator)
    _refuse_validating(code, hate_task, hate_round, validator, annotator)
    client = api(validator)
    expected = {"detail": VALIDATE_MESSAGES[code], "code": code, "url": URLS.get(code)}
    response = client.get(NEXT)
    assert (response.status_code, response.json()) == (403, expected)
    response = client.post(f"/api/examples/{example.pk}/validations/", {"verdict": "correct"}, format="json")
    assert (response.status_code, response.json()) == (403, expected)
    assert example.validations.count() == 0


def test_tutorial_does_not_stop_validating(api, hate_task, hate_round, annotator, validator):
    refuse("tutorial", hate_task, hate_round, validator)
    example = make_example(hate_round, annotator)
    assert (
        api(validator).get("/api/tasks/hate-speech/validations/next/").json()["example"]["id"] == example.pk
    )
    response = api(validator).post(
        f"/api/examples/{example.pk}/validations/", {"verdict": "correct"}, format="json"
    )
    assert response.status_code == 201


def test_retract_in_a_competition_round_is_refused(api, hate_task, hate_round, annotator):
    hate_round.is_competition = True
    hate_round.save(update_fields=["is_competition"])
    example = make_example(hate_round, annotator)
    response = api(annotator).post(f"/api/examples/{example.pk}/retract/")
    assert response.status_code == 400
    assert response.json() == {
        "non_field_errors": ["Round 1 is a competition: examples written in it cannot be retracted."]
    }


# --- the owners' workers API ---------------------------------------------------------------------------


def test_owner_lists_the_workers_with_their_standing(api, owner, hate_task, annotator, validator):
    standing(hate_task, validator, listing="blocked", listing_reason="spam")
    qualification.hold_for_review(task=hate_task, user=annotator, reason="gold accuracy 0.4")
    response = api(owner).get(WORKERS)
    assert response.status_code == 200
    rows = response.json()["results"]
    assert [(r["username"], r["listing"], r["held"], r["held_reason"]) for r in rows] == [
        ("annotator", "", True, "gold accuracy 0.4"),
        ("validator", "blocked", False, ""),
    ]
    assert rows[1]["listing_reason"] == "spam"


def test_put_sets_listing_and_hold_patch_releases(api, owner, hate_task, annotator):
    client = api(owner)
    url = f"{WORKERS}annotator/"
    response = client.put(
        url,
        {"listing": "blocked", "listing_reason": "copied texts", "held": True, "held_reason": "check"},
        format="json",
    )
    assert response.status_code == 200
    body = response.json()
    assert (body["listing"], body["listing_reason"], body["held"], body["held_reason"]) == (
        "blocked",
        "copied texts",
        True,
        "check",
    )
    with pytest.raises(qualification.NotQualified):
        qualification.check_can_contribute(hate_task, annotator, "write", lock=False)

    response = client.patch(url, {"held": False}, format="json")
    assert response.status_code == 200 and response.json()["held"] is False
    assert response.json()["listing"] == "blocked"  # a PATCH leaves the rest alone
    response = client.patch(url, {"listing": ""}, format="json")
    assert (response.json()["listing"], response.json()["listing_reason"]) == ("", "")
    assert qualification.check_can_contribute(hate_task, annotator, "write", lock=False) is not None
    assert client.get(url).json()["listing"] == ""


def test_bad_input_is_a_400_with_field_messages(api, owner, hate_task, annotator):
    client = api(owner)
    url = f"{WORKERS}annotator/"
    response = client.put(url, {"listing": "banned"}, format="json")
    assert response.status_code == 400
    body = response.json()
    assert body["listing"] == ['"banned" is not a valid choice.']
    assert body["held"] == ["This field is required."]
    response = client.patch(url, {"held": "maybe", "held_reason": "bad\x07bell"}, format="json")
    assert response.status_code == 400
    assert set(response.json()) == {"held", "held_reason"}
    assert not hate_task.workers.filter(user=annotator).exists()


def test_non_owners_get_403_unknown_user_404(api, hate_task, owner, annotator, outsider):
    assert api(outsider).get(WORKERS).status_code == 403
    assert (
        api(annotator).patch(f"{WORKERS}annotator/", {"listing": "allowed"}, format="json").status_code == 403
    )
    assert api(owner).patch(f"{WORKERS}nobody/", {"listing": "allowed"}, format="json").status_code == 404
    assert api(owner).get("/api/tasks/no-such-task/workers/").status_code == 404
    assert not hate_task.workers.exists()


def test_quiz_passed_shows_in_the_standing(api, owner, hate_task, annotator):
    quiz = make_quiz(hate_task, n_questions=1)
    qualification.submit_quiz(task=hate_task, user=annotator, answers={str(quiz.questions.get().pk): "a"})
    row = api(owner).get(f"{WORKERS}annotator/").json()
    assert row["quiz_passed_at"] is not None and row["tutorial_seen_at"] is None
