"""Undoing a verdict on the validate page (validation.verdict_undo): within the window and while the
example is unsettled the vote goes and the example is served again; too late, settled, someone else's
or another task's are refused; a gold answer is undone alike; a paid verdict gets one reversal."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import timezone

from crowd.models import LedgerEntry, Participation
from crowd.selectors import progress_of
from tests.factories.accounts import UserFactory
from tests.factories.annotation import make_example
from tests.factories.crowd import enter_as, make_study
from tests.factories.validation import GoldItemFactory, submit_served
from validation import verdict_undo
from validation.models import GoldAnswer, GoldClaim, Validation, ValidationClaim
from validation.services import VerdictError, next_example, submit_validation

pytestmark = pytest.mark.django_db

URL = reverse("validation:validate", args=["hate-speech"])
UNDO = reverse("validation:undo", args=["hate-speech"])


def _login(client, user, password):
    assert client.login(username=user.username, password=password)


def _served_id(client) -> int:
    page = client.get(URL).text
    return int(re.search(r'name="example" value="(\d+)"', page).group(1))


def test_the_page_offers_undo_and_undo_serves_the_example_again(
    client, hate_round, annotator, validator, password
):
    first, second = make_example(hate_round, annotator), make_example(hate_round, annotator)
    _login(client, validator, password)
    served = _served_id(client)
    client.post(URL, {"example": served, "verdict": "incorrect", "round": hate_round.number})
    page = client.get(URL).text
    # The next example is served, with the offer to undo the verdict on the first one.
    offer = re.search(
        r'<form method="post" action="[^"]+/validate/undo/" class="undo"[^>]*>(.*?)</form>', page, re.S
    )
    assert offer is not None
    assert f'name="undo" value="{served}"' in offer.group(1)
    assert "<strong>incorrect</strong>" in offer.group(1)
    assert 'data-key="u"' in offer.group(1)
    other = ({first.pk, second.pk} - {served}).pop()
    assert ValidationClaim.objects.get(validator=validator).example_id == other

    response = client.post(UNDO, {"undo": served, "round": hate_round.number})
    assert response.status_code == 302
    assert not Validation.objects.filter(validator=validator).exists()
    page = client.get(URL).text
    assert "was undone" in page
    assert 'class="undo"' not in page  # offered once
    assert f'name="example" value="{served}"' in page  # the undone example is served again
    assert ValidationClaim.objects.get(validator=validator).example_id == served


def test_the_empty_page_after_a_verdict_offers_undo_with_a_plain_title(
    client, hate_round, annotator, validator, password
):
    # The last example judged: the page says nothing is left, offers the undo, and its key script sits in
    # the body; it once sat in the title block too, and the tab showed the tag as text.
    make_example(hate_round, annotator)
    _login(client, validator, password)
    client.post(URL, {"example": _served_id(client), "verdict": "correct", "round": hate_round.number})
    page = client.get(URL).text
    assert (
        re.search(r"<title>(.*?)</title>", page, re.S).group(1)
        == "Nothing to validate · Hate speech · Dynabench"
    )
    assert 'class="undo"' in page
    assert page.count("validation/verdict_keys") == 1


def test_undo_is_refused_after_the_window_and_the_vote_stays(hate_round, annotator, validator):
    example = make_example(hate_round, annotator)
    next_example(round_=hate_round, validator=validator)
    submit_validation(example=example, validator=validator, verdict="correct")
    later = timezone.now() + timedelta(seconds=verdict_undo.undo_seconds() + 1)
    with pytest.raises(VerdictError) as refused:
        verdict_undo.undo_verdict(example=example, validator=validator, now=later)
    assert refused.value.code == "undo_expired"
    assert Validation.objects.filter(example=example, validator=validator).count() == 1


def test_undo_is_refused_once_the_example_settled(hate_task, hate_round, annotator, validator):
    example = make_example(hate_round, annotator)
    submit_served(example=example, validator=validator, verdict="correct")
    for _ in range(hate_task.validation_quorum - 1):
        submit_served(example=example, validator=UserFactory(), verdict="correct")
    example.refresh_from_db()
    assert example.status == "validated_correct"
    with pytest.raises(VerdictError) as refused:
        verdict_undo.undo_verdict(example=example, validator=validator)
    assert refused.value.code == "settled"
    assert Validation.objects.filter(example=example).count() == hate_task.validation_quorum


def test_nothing_to_undo_without_a_vote_of_ones_own(hate_round, annotator, validator):
    example = make_example(hate_round, annotator)
    submit_served(example=example, validator=UserFactory(), verdict="correct")
    with pytest.raises(VerdictError) as refused:
        verdict_undo.undo_verdict(example=example, validator=validator)
    assert refused.value.code == "nothing_to_undo"
    assert Validation.objects.filter(example=example).count() == 1


def test_another_tasks_example_is_a_404(client, hate_round, nli_task, annotator, validator, password):
    from tasks.models import Round

    other_round = Round.objects.create(task=nli_task, number=1)
    other = make_example(other_round, annotator, label="entailment")
    submit_served(example=other, validator=validator, verdict="correct")
    _login(client, validator, password)
    assert client.post(UNDO, {"undo": other.pk, "round": hate_round.number}).status_code == 404
    assert client.post(UNDO, {"undo": "x", "round": hate_round.number}).status_code == 404
    assert Validation.objects.filter(example=other, validator=validator).count() == 1


def test_a_gold_answer_is_undone_like_a_vote(hate_round, annotator, validator):
    gold = GoldItemFactory(example=make_example(hate_round, annotator, status="validated_correct"))
    GoldClaim.objects.create(
        gold=gold, validator=validator, round=hate_round, expires_at=timezone.now() + timedelta(minutes=5)
    )
    outcome = submit_validation(example=gold.example, validator=validator, verdict="flagged")
    assert outcome.gold and GoldAnswer.objects.filter(validator=validator).count() == 1
    verdict_undo.undo_verdict(example=gold.example, validator=validator)
    assert not GoldAnswer.objects.filter(validator=validator).exists()
    # Reserved again as gold, so the same item comes back and its next verdict is a gold answer again.
    assert next_example(round_=hate_round, validator=validator) == gold.example
    assert submit_validation(example=gold.example, validator=validator, verdict="correct").gold


def test_a_paid_verdict_gets_one_reversal_and_progress_nets_it_out(hate_round, annotator):
    study = make_study(hate_round)
    worker = enter_as(study, "pid-undo").user
    example = make_example(hate_round, annotator)
    vote = submit_served(example=example, validator=worker, verdict="correct").validation
    participation = Participation.objects.get(user=worker)
    assert progress_of(participation).validations == 1
    verdict_undo.undo_verdict(example=example, validator=worker)
    rows = list(LedgerEntry.objects.filter(worker=worker).order_by("id").values_list("event_key", "amount"))
    assert rows == [
        (f"validation:{vote.pk}", Decimal("0.10")),
        (f"reversal:validation:{vote.pk}", Decimal("-0.10")),
    ]
    assert progress_of(participation).validations == 0
    # The undo served it to them again, so this verdict counts with no new serving.
    again = submit_validation(example=example, validator=worker, verdict="incorrect").validation
    assert LedgerEntry.objects.filter(
        worker=worker, event_key=f"validation:{again.pk}"
    ).get().amount == Decimal("0.10")
    assert progress_of(participation).validations == 1


def test_the_undone_example_comes_back_before_one_the_queue_would_serve_first(
    hate_round, annotator, validator
):
    voted = make_example(hate_round, annotator)
    submit_served(example=voted, validator=UserFactory(), verdict="correct")
    fresh = make_example(hate_round, annotator)  # no votes: the queue serves it before ``voted``
    submit_served(example=voted, validator=validator, verdict="incorrect")
    assert next_example(round_=hate_round, validator=validator) == fresh
    verdict_undo.undo_verdict(example=voted, validator=validator)
    assert next_example(round_=hate_round, validator=validator) == voted


def test_the_api_undoes_a_verdict_once(hate_round, annotator, validator):
    from tests.helpers.api import client_for

    example = make_example(hate_round, annotator)
    api = client_for(validator)
    url = f"/api/examples/{example.pk}/validations/"
    assert api.get("/api/tasks/hate-speech/validations/next/").json()["example"]["id"] == example.pk
    assert api.post(url, {"verdict": "flagged"}, format="json").status_code == 201
    assert api.delete(url + "mine/").status_code == 204
    assert not Validation.objects.filter(example=example).exists()
    again = api.delete(url + "mine/")
    assert again.status_code == 409
    assert again.json()["detail"] == f"You have no verdict on example {example.pk} to undo."
