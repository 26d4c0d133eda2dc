"""Validation through the API: the claimed queue and verdicts up to the quorum."""

from __future__ import annotations

import pytest

from annotation.models import Example
from tests.factories.annotation import make_example
from tests.factories.validation import serve

pytestmark = pytest.mark.django_db

NEXT = "/api/tasks/hate-speech/validations/next/"


def verdict(client, example_id, **body):
    return client.post(f"/api/examples/{example_id}/validations/", body, format="json")


def test_next_serves_and_claims_like_the_page(api, hate_round, annotator, validator, outsider):
    example = make_example(hate_round, annotator, model_wrong=True, inputs={"statement": "🙂 shalom שלום"})
    first = api(validator).get(NEXT).json()
    assert first["round"] == 1
    assert first["example"]["id"] == example.pk
    assert first["example"]["inputs"] == {"statement": "🙂 shalom שלום"}
    assert first["example"]["target"] == "hateful"
    assert "annotator" not in first["example"]
    assert first["claim_expires_at"] is not None and first["queue"] is None
    assert api(validator).get(NEXT).json()["example"]["id"] == example.pk  # asking again: the same one
    other = api(outsider).get(NEXT).json()  # claimed by validator: nothing left for outsider
    assert other["example"] is None
    round_holds = {"written": 1, "pending": 1, "reason": "unavailable"}
    assert other["queue"] == {"open": 1, "own": 0, "judged": 0, "claimed": 1, **round_holds}
    own = api(annotator).get(NEXT).json()
    assert own["example"] is None
    assert own["queue"] == {"open": 1, "own": 1, "judged": 0, "claimed": 0, **round_holds}


def test_an_empty_queue_says_why_in_one_word(api, hate_round, annotator, validator):
    """The page's four explanations (tests/validation/test_validate_page.py), for a client: nothing
    written, written but none open (a non-fooling example where only fooling ones are validated), open
    but none for the caller, every one settled."""

    def queue():
        body = api(validator).get(NEXT).json()
        assert body["example"] is None
        return body["queue"]

    assert queue() == {
        "open": 0,
        "own": 0,
        "judged": 0,
        "claimed": 0,
        "written": 0,
        "pending": 0,
        "reason": "nothing_written",
    }
    make_example(hate_round, annotator, model_wrong=False)  # not model-fooling: not validated here
    make_example(hate_round, annotator, model_wrong=True, is_retracted=True)  # retracted: not written
    assert queue() == {
        "open": 0,
        "own": 0,
        "judged": 0,
        "claimed": 0,
        "written": 1,
        "pending": 1,
        "reason": "none_open",
    }
    Example.objects.update(status="validated_correct")
    mine = make_example(hate_round, validator, model_wrong=True)
    assert queue() == {
        "open": 1,
        "own": 1,
        "judged": 0,
        "claimed": 0,
        "written": 2,
        "pending": 1,
        "reason": "unavailable",
    }
    Example.objects.filter(pk=mine.pk).update(status="flagged")
    assert queue()["reason"] == "settled" and queue()["written"] == 2 and queue()["pending"] == 0


def test_next_with_round_parameter(api, hate_round, validator):
    assert api(validator).get(NEXT + "?round=1").json()["round"] == 1
    assert api(validator).get(NEXT + "?round=2").status_code == 404
    assert api(validator).get(NEXT + "?round=abc").status_code == 400
    assert api(validator).get(NEXT + "?round=99999999999999999999").status_code == 400


def test_three_matching_verdicts_settle_once(
    api, hate_round, annotator, validator, outsider, owner, django_user_model
):
    example = make_example(hate_round, annotator, model_wrong=True)
    # Each is served it in turn (a verdict counts only on what was served; the vote releases the claim).
    assert api(validator).get(NEXT).json()["example"]["id"] == example.pk
    one = verdict(api(validator), example.pk, verdict="correct", reason="clearly\r\nhateful")
    assert one.status_code == 201
    assert one.json() == {
        "id": one.json()["id"],
        "example": example.pk,
        "verdict": "correct",
        "corrected_label": "",
        "reason": "clearly\nhateful",
        "settled": False,
        "example_status": "pending",
    }
    assert api(outsider).get(NEXT).json()["example"]["id"] == example.pk
    assert verdict(api(outsider), example.pk, verdict="correct").json()["settled"] is False
    assert api(owner).get(NEXT).json()["example"]["id"] == example.pk
    third = verdict(api(owner), example.pk, verdict="correct").json()
    assert third["settled"] is True and third["example_status"] == "validated_correct"
    assert Example.objects.get(pk=example.pk).status == "validated_correct"
    # A voter hears that it is settled; someone who never saw it gets the 404 of an unknown id.
    late_voter = verdict(api(validator), example.pk, verdict="incorrect")
    assert late_voter.status_code == 409 and late_voter.json()["detail"].startswith(
        "This example is already settled"
    )
    late = django_user_model.objects.create_user(username="late", password="x")
    refused = verdict(api(late), example.pk, verdict="incorrect")
    assert (refused.status_code, refused.json()) == (404, {"detail": "No such example."})


def test_verdict_refusals(api, hate_round, annotator, validator, owner):
    example = make_example(hate_round, annotator, model_wrong=True)
    assert api(validator).get(NEXT).json()["example"]["id"] == example.pk
    own = verdict(api(annotator), example.pk, verdict="correct")
    assert own.status_code == 403 and "your own example" in own.json()["detail"]
    bad = verdict(api(validator), example.pk, verdict="maybe")
    assert bad.status_code == 400 and "verdict" in bad.json()
    wrong_label = verdict(api(validator), example.pk, verdict="correct", corrected_label="not-hateful")
    assert wrong_label.status_code == 400
    assert "Only an 'incorrect' verdict" in wrong_label.json()["corrected_label"][0]
    unknown_label = verdict(api(validator), example.pk, verdict="incorrect", corrected_label="spam")
    assert unknown_label.status_code == 400 and "Choose one of" in unknown_label.json()["corrected_label"][0]
    nul = verdict(api(validator), example.pk, verdict="correct", reason="a\x00")
    assert nul.status_code == 400 and "reason" in nul.json()
    ok = verdict(api(validator), example.pk, verdict="incorrect", corrected_label="not-hateful")
    assert ok.status_code == 201 and ok.json()["corrected_label"] == "not-hateful"
    twice = verdict(api(validator), example.pk, verdict="incorrect")
    assert twice.status_code == 409 and "already validated" in twice.json()["detail"]
    # Not open, or retracted: a validator who may not see it gets the 404 of an unknown id; the task's
    # owner (who may see every example of the task) is told why.
    unknown = verdict(api(validator), 2**80, verdict="correct")
    assert (unknown.status_code, unknown.json()) == (404, {"detail": "No such example."})
    non_fooling = make_example(hate_round, annotator, model_wrong=False)
    closed = verdict(api(validator), non_fooling.pk, verdict="correct")
    assert (closed.status_code, closed.json()) == (404, {"detail": "No such example."})
    closed = verdict(api(owner), non_fooling.pk, verdict="correct")
    assert closed.status_code == 409 and "not open" in closed.json()["detail"]
    retracted = make_example(hate_round, annotator, model_wrong=True, is_retracted=True)
    gone = verdict(api(validator), retracted.pk, verdict="correct")
    assert (gone.status_code, gone.json()) == (404, {"detail": "No such example."})
    gone = verdict(api(owner), retracted.pk, verdict="correct")
    assert gone.status_code == 409 and "retracted by its author" in gone.json()["detail"]


def test_owner_mode_settles_with_one_verdict_for_task_owners_only(
    api, hate_round, annotator, validator, owner
):
    example = make_example(hate_round, annotator, model_wrong=True)
    serve(example, validator)  # served, so the refusal is about owner_mode, not about the id
    refused = verdict(api(validator), example.pk, verdict="incorrect", owner_mode=True)
    assert refused.status_code == 403 and "owner" in refused.json()["detail"]
    assert Example.objects.get(pk=example.pk).status == "pending"
    settled = verdict(api(owner), example.pk, verdict="incorrect", owner_mode=True)
    assert settled.status_code == 201
    assert settled.json()["settled"] is True and settled.json()["example_status"] == "validated_incorrect"
    assert Example.objects.get(pk=example.pk).status == "validated_incorrect"


@pytest.mark.parametrize(
    "value, kind", [("true", "a string"), (1, "a number"), ("false", "a string"), ([], "a list")]
)
def test_owner_mode_takes_only_json_true_or_false(api, hate_round, annotator, owner, value, kind):
    example = make_example(hate_round, annotator, model_wrong=True)
    response = verdict(api(owner), example.pk, verdict="incorrect", owner_mode=value)
    assert response.status_code == 400
    assert response.json() == {"owner_mode": [f"Must be JSON true or false, not {kind}."]}
    assert Example.objects.get(pk=example.pk).status == "pending"
    assert example.validations.count() == 0
