"""/tasks/<slug>/review/: task owners only; filters by flags and by disagreement; owner verdicts."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.factories.annotation import make_example
from tests.factories.validation import submit_served
from validation.models import Validation

URL = reverse("validation:review", args=["hate-speech"])
VERDICT_URL = reverse("validation:review_verdict", args=["hate-speech"])


@pytest.fixture
def examples(hate_round, annotator, validator, crowd):
    """quiet: no verdicts; flagged: one 'flagged' verdict; author_flag: flagged by its author;
    split: one 'correct' and one 'incorrect' verdict."""
    quiet = make_example(hate_round, annotator, inputs={"statement": "quiet one"})
    flagged = make_example(hate_round, annotator, inputs={"statement": "flagged one"})
    author_flag = make_example(
        hate_round,
        annotator,
        inputs={"statement": "author flag"},
        is_flagged_by_annotator=True,
        flag_reason="typo",
    )
    split = make_example(hate_round, annotator, inputs={"statement": "split one"})
    submit_served(example=flagged, validator=validator, verdict="flagged", reason="nonsense")
    submit_served(example=split, validator=validator, verdict="correct")
    submit_served(example=split, validator=crowd[0], verdict="incorrect")
    return {"quiet": quiet, "flagged": flagged, "author_flag": author_flag, "split": split}


def _shown(page):
    return {s for s in ("quiet one", "flagged one", "author flag", "split one") if s in page.text}


@pytest.mark.parametrize("who", ["outsider", "validator", "annotator"])
def test_non_owners_get_404(client, request, password, examples, who):
    user = request.getfixturevalue(who)
    client.login(username=user.username, password=password)
    assert client.get(URL).status_code == 404
    e = examples["split"]
    assert client.post(VERDICT_URL, {"example": e.pk, "verdict": "correct"}).status_code == 404
    e.refresh_from_db()
    assert e.status == "pending"


def test_filters(client, owner, password, examples):
    client.login(username=owner.username, password=password)
    assert _shown(client.get(URL)) == {"flagged one", "author flag"}  # default: flags, pending
    assert _shown(client.get(URL, {"show": "disagreement"})) == {"split one"}
    assert _shown(client.get(URL, {"show": "all"})) == {
        "quiet one",
        "flagged one",
        "author flag",
        "split one",
    }
    assert _shown(client.get(URL, {"show": "all", "state": "settled"})) == set()
    assert _shown(client.get(URL, {"show": "bogus", "round": "1"})) == {"flagged one", "author flag"}
    assert client.get(URL, {"round": "7"}).status_code == 404
    page = client.get(URL)
    assert "validator: flagged — " in page.text and "nonsense" in page.text
    assert "Flagged by its author" in page.text


def test_owner_verdict_settles_and_keeps_the_filters(client, owner, password, examples):
    client.login(username=owner.username, password=password)
    e = examples["split"]
    response = client.post(
        VERDICT_URL,
        {
            "example": e.pk,
            "verdict": "incorrect",
            "corrected_label": "not-hateful",
            "show": "disagreement",
            "state": "pending",
            "round": "1",
        },
    )
    assert response.status_code == 302
    assert response["Location"] == f"{URL}?show=disagreement&state=pending&round=1"
    e.refresh_from_db()
    assert e.status == "validated_incorrect"
    owner_vote = Validation.objects.get(example=e, validator=owner)
    assert (owner_vote.is_owner_verdict, owner_vote.corrected_label) == (True, "not-hateful")
    page = client.get(response["Location"])
    assert f"Example {e.pk} is now settled." in page.text
    assert _shown(page) == set()
    assert _shown(client.get(URL, {"show": "disagreement", "state": "settled"})) == {"split one"}


def test_owner_cannot_settle_twice(client, owner, password, examples):
    client.login(username=owner.username, password=password)
    e = examples["quiet"]
    client.post(VERDICT_URL, {"example": e.pk, "verdict": "flagged"})
    page = client.post(VERDICT_URL, {"example": e.pk, "verdict": "correct"}, follow=True)
    assert "was settled before your verdict" in page.text
    e.refresh_from_db()
    assert e.status == "flagged"
