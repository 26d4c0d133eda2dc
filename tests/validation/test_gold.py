"""Gold items in the validation queue: the mixing schedule (by hand), what a validator is never served,
gold answers stored apart from votes (no quorum, no settlement, no agreement), and a gold item that
looks like any other example on the page and in the API."""

from __future__ import annotations

import pytest

from annotation.models import Example
from tasks.round_stats import round_counts
from tests.factories.annotation import make_example
from tests.factories.validation import GoldItemFactory, ValidationFactory, serve_as_gold, submit_served
from tests.helpers.api import client_for
from validation.gold import selectors as gold_selectors
from validation.gold.selectors import ServedCounts, gold_due_after
from validation.models import GoldAnswer, GoldClaim, Validation
from validation.services import VerdictError, next_example, submit_validation

pytestmark = pytest.mark.django_db


def _gold(round_, annotator, verdict="correct", **fields):
    """A settled example of ``round_`` made a gold item with ``verdict``."""
    example = make_example(round_, annotator, status="validated_correct", **fields)
    return GoldItemFactory(example=example, verdict=verdict)


@pytest.mark.parametrize(
    ("share", "served", "answered", "due"),
    [
        (0.25, 0, 0, False),  # floor(0.25 * 1) = 0
        (0.25, 2, 0, False),  # floor(0.25 * 3) = 0
        (0.25, 3, 0, True),  # floor(0.25 * 4) = 1 > 0: the 4th example is gold
        (0.25, 4, 1, False),  # floor(0.25 * 5) = 1
        (0.25, 7, 1, True),  # floor(0.25 * 8) = 2 > 1: the 8th
        (0.25, 7, 2, False),
        (0.29, 99, 28, True),  # floor(0.29 * 100) is 29, though 0.29 * 100 = 28.999999999999996
        (0.0, 50, 0, False),
    ],
)
def test_the_mixing_rule_by_hand(share, served, answered, due):
    assert gold_due_after(share, ServedCounts(votes=served - answered, gold_answered=answered)) is due


def test_a_quarter_share_serves_every_fourth_example_as_gold(hate_task, hate_round, annotator, validator):
    hate_task.gold_share = 0.25
    hate_task.save(update_fields=["gold_share"])
    real = {make_example(hate_round, annotator).pk for _ in range(8)}
    golds = {_gold(hate_round, annotator).example_id for _ in range(3)}
    served = []
    for _ in range(8):
        example = next_example(round_=hate_round, validator=validator)
        served.append("gold" if example.pk in golds else "real" if example.pk in real else "?")
        submit_validation(example=example, validator=validator, verdict="correct")
    assert served == ["real", "real", "real", "gold", "real", "real", "real", "gold"]
    assert GoldAnswer.objects.filter(validator=validator).count() == 2
    assert Validation.objects.filter(validator=validator).count() == 6
    assert not GoldClaim.objects.exists()  # answered gold claims go


def test_a_reload_returns_the_same_gold_item(hate_task, hate_round, annotator, validator):
    hate_task.gold_share = 0.5
    hate_task.save(update_fields=["gold_share"])
    make_example(hate_round, annotator)
    make_example(hate_round, annotator)
    gold = _gold(hate_round, annotator)
    first = next_example(round_=hate_round, validator=validator)
    submit_validation(example=first, validator=validator, verdict="correct")
    second = next_example(round_=hate_round, validator=validator)  # floor(0.5 * 2) = 1 > 0: gold
    assert second == gold.example
    assert next_example(round_=hate_round, validator=validator) == gold.example
    assert GoldClaim.objects.filter(validator=validator).count() == 1


def test_gold_is_never_one_the_validator_wrote_voted_on_or_answered(
    hate_round, annotator, validator, make_user
):
    other = make_user("other")
    own = _gold(hate_round, validator)
    voted = _gold(hate_round, annotator)
    ValidationFactory(example=voted.example, validator=validator)
    answered = _gold(hate_round, annotator)
    GoldAnswer.objects.create(gold=answered, validator=validator, verdict="correct", is_correct=True)
    retired = _gold(hate_round, annotator)
    retired.retired_at = retired.created_at
    retired.save()
    retracted = GoldItemFactory(example=make_example(hate_round, annotator, status="validated_correct"))
    Example.objects.filter(pk=retracted.example_id).update(is_retracted=True)
    fresh = _gold(hate_round, annotator)
    assert list(gold_selectors.gold_queue_for(hate_round, validator)) == [fresh]
    assert set(gold_selectors.gold_queue_for(hate_round, other)) == {own, voted, answered, fresh}


def test_without_gold_left_the_ordinary_queue_serves(hate_task, hate_round, annotator, validator):
    hate_task.gold_share = 0.5
    hate_task.save(update_fields=["gold_share"])
    real = [make_example(hate_round, annotator) for _ in range(2)]
    for _ in range(2):
        example = next_example(round_=hate_round, validator=validator)
        assert example in real
        submit_validation(example=example, validator=validator, verdict="correct")


def test_a_pending_gold_item_is_not_in_the_ordinary_queue(hate_round, annotator, validator):
    example = make_example(hate_round, annotator)
    GoldItemFactory(example=example)
    assert next_example(round_=hate_round, validator=validator) is None


def test_a_gold_answer_is_stored_apart_and_changes_no_quorum(
    hate_task, hate_round, annotator, validator, crowd
):
    hate_task.validation_quorum = 2
    hate_task.save(update_fields=["validation_quorum"])
    example = make_example(hate_round, annotator)  # pending: one more matching vote would settle it
    ValidationFactory(example=example, validator=crowd[0], verdict="correct")
    ValidationFactory(example=example, validator=crowd[1], verdict="incorrect")
    gold = GoldItemFactory(example=example, verdict="incorrect")
    serve_as_gold(gold, validator)
    alpha_before = round_counts(hate_round).agreement

    outcome = submit_validation(example=example, validator=validator, verdict="incorrect", reason="rude")

    example.refresh_from_db()
    assert example.status == "pending"  # a real "incorrect" vote would have reached the quorum of 2
    assert Validation.objects.filter(example=example).count() == 2
    answer = GoldAnswer.objects.get()
    assert (answer.gold, answer.validator, answer.verdict, answer.is_correct, answer.reason) == (
        gold,
        validator,
        "incorrect",
        True,
        "rude",
    )
    assert (outcome.settled, outcome.status, outcome.validation) == (False, "pending", answer)
    assert round_counts(hate_round).agreement == alpha_before
    with pytest.raises(VerdictError) as second:
        submit_validation(example=example, validator=validator, verdict="incorrect")
    assert second.value.code == "already_validated"


def test_a_wrong_gold_answer_is_marked_wrong(hate_round, annotator, validator):
    gold = _gold(hate_round, annotator, verdict="correct")
    serve_as_gold(gold, validator)
    submit_validation(example=gold.example, validator=validator, verdict="flagged")
    assert GoldAnswer.objects.get().is_correct is False


def test_the_api_shows_gold_as_an_example_of_the_round_being_validated(
    hate_task, hate_round, annotator, validator
):
    from tasks.services import ensure_round, set_current_round

    round_2 = ensure_round(task=hate_task, number=2)
    set_current_round(task=hate_task, round_=round_2)
    hate_task.gold_share = 0.5
    hate_task.save(update_fields=["gold_share"])
    real = make_example(round_2, annotator)
    gold = _gold(hate_round, annotator)  # a round-1 gold item served in round 2
    client = client_for(validator)
    url = "/api/tasks/hate-speech/validations/next/?round=2"

    first = client.get(url).json()
    assert first["example"]["id"] == real.pk
    vote = client.post(f"/api/examples/{real.pk}/validations/", {"verdict": "correct"}, format="json")
    assert vote.status_code == 201

    served = client.get(url).json()
    assert served["example"]["id"] == gold.example_id
    assert set(served) == set(first) and set(served["example"]) == set(first["example"])
    assert served["example"]["round"] == 2 and served["round"] == 2
    assert served["claim_expires_at"] is not None and served["queue"] is None

    answer = client.post(
        f"/api/examples/{gold.example_id}/validations/", {"verdict": "correct"}, format="json"
    )
    assert answer.status_code == 201
    body = answer.json()
    assert set(body) == set(vote.json())
    assert (body["settled"], body["example_status"], body["verdict"]) == (False, "pending", "correct")
    assert body["id"] > vote.json()["id"]  # the votes' id series
    again = client.post(
        f"/api/examples/{gold.example_id}/validations/", {"verdict": "correct"}, format="json"
    )
    assert again.status_code == 409
    assert not Validation.objects.filter(example=gold.example).exists()


def test_the_validate_page_shows_gold_like_any_example(
    client, hate_task, hate_round, annotator, validator, password
):
    hate_task.gold_share = 0.5
    hate_task.save(update_fields=["gold_share"])
    real = make_example(hate_round, annotator, inputs={"statement": "a real one"})
    gold = _gold(hate_round, annotator, inputs={"statement": "a gold one"})
    client.login(username="validator", password=password)
    page = client.get("/tasks/hate-speech/validate/").content.decode()
    assert "a real one" in page
    client.post(
        "/tasks/hate-speech/validate/", {"round": 1, "example": real.pk, "verdict": "correct", "reason": ""}
    )
    page = client.get("/tasks/hate-speech/validate/").content.decode()
    assert "a gold one" in page and "gold" not in page.lower().replace("a gold one", "")
    response = client.post(
        "/tasks/hate-speech/validate/",
        {"round": 1, "example": gold.example_id, "verdict": "correct", "reason": ""},
        follow=True,
    )
    assert "Verdict recorded." in response.content.decode()
    assert GoldAnswer.objects.filter(gold=gold, validator=validator).exists()


def test_a_validators_own_statistics_count_a_gold_answer_as_a_verdict(hate_round, annotator, validator):
    from validation.selectors import annotator_round_stats

    real = make_example(hate_round, annotator)
    submit_served(example=real, validator=validator, verdict="correct")
    gold = _gold(hate_round, annotator)
    serve_as_gold(gold, validator)
    submit_validation(example=gold.example, validator=validator, verdict="correct")
    [row] = annotator_round_stats(hate_round.task, user=validator)
    assert (row.round_number, row.validations) == (1, 2)
