"""A participation abandoned at its time limit (docs/crowd.md, "Time limit"): its place went to someone
else, so nothing more is recorded from it: the create page, the validate page and the API refuse with a
message that says so (the text kept), the banner says why instead of vanishing, and what was done within
the limit stays paid."""

from __future__ import annotations

import re
from datetime import UTC, timedelta
from decimal import Decimal
from urllib.parse import urlencode

import pytest
from django.urls import reverse

from annotation.models import Example
from crowd import jobs
from crowd.models import LedgerEntry, Participation
from tests.factories.annotation import make_example
from tests.factories.crowd import PROLIFIC_IDS, make_study
from tests.factories.validation import serve

pytestmark = pytest.mark.django_db

CREATE = reverse("annotation:create", args=["hate-speech"])


def _form(client) -> dict:
    page = client.get(CREATE)
    form = page.context["form"]
    return {
        "client_token": form["client_token"].value(),
        "started": form["started"].value(),
        "round": re.search(r'name="round" value="(\d+)"', page.text).group(1),
    }


@pytest.fixture
def late(client, hate_round, rule_model):
    """A participant who wrote one example within the 30-minute limit, then let it pass with the create
    form open: ``(client, participation, the open form's fields, the deadline's "HH:MM")``."""
    study = make_study(hate_round, time_limit_minutes=30)
    client.get(f"/study/{study.public_id}/enter/?{urlencode({'key': study.entry_key, **PROLIFIC_IDS})}")
    client.post(f"/study/{study.public_id}/consent/")
    assert (
        client.post(CREATE, {"statement": "they are vermin", "label": "hateful", **_form(client)}).status_code
        == 302
    )
    fields = _form(client)
    participation = Participation.objects.get()
    started = participation.started_at - timedelta(minutes=31)
    Participation.objects.filter(pk=participation.pk).update(started_at=started)
    deadline = (started + timedelta(minutes=30)).astimezone(UTC).strftime("%H:%M")
    return client, participation, fields, deadline


def _message(deadline: str) -> str:
    return (
        f"Your time for Hate speech, round 1 ran out at {deadline} UTC (its limit is 30 minutes), so your "
        "place went to someone else: new examples and validations are not recorded or paid. What you did "
        "before is kept and paid. Please return the study on Prolific."
    )


def _paid(participation):
    return list(LedgerEntry.objects.filter(worker=participation.user).values_list("kind", "amount"))


@pytest.mark.parametrize("recorded", [True, False], ids=["job-ran", "not-yet-recorded"])
def test_the_open_create_form_is_refused_with_the_text_kept(late, recorded):
    client, participation, fields, deadline = late
    if recorded:
        assert jobs.abandon_expired_job() == 1
    page = client.post(CREATE, {"statement": "keep them out", "label": "hateful", **fields})
    assert page.status_code == 200
    assert _message(deadline).replace("'", "&#x27;") in page.text
    assert "keep them out" in page.text  # the text is kept in the form
    assert Example.objects.count() == 1
    assert _paid(participation) == [("example", Decimal("0.5000"))]


def test_the_in_page_submit_is_refused_too(late):
    client, participation, fields, deadline = late
    jobs.abandon_expired_job()
    answer = client.post(
        CREATE,
        {"statement": "keep them out", "label": "hateful", **fields},
        headers={"X-Requested-With": "fetch"},
    )
    assert answer.status_code == 422
    assert "Your example was not saved." in answer.text
    assert f"ran out at {deadline} UTC" in answer.text
    assert Example.objects.count() == 1


def test_the_create_page_and_the_banner_say_why(late):
    client, participation, fields, deadline = late
    jobs.abandon_expired_job()
    page = client.get(CREATE)
    assert page.status_code == 200
    assert _message(deadline).replace("'", "&#x27;") in page.text
    assert 'name="statement"' not in page.text  # no form to write in
    banner = client.get("/").text.split('class="study-banner')[1].split("</aside>")[0]
    assert f"your time ran out at {deadline} UTC" in banner
    assert "What you did (1 of 2 examples, 0 of 1 validations) is kept and paid" in banner
    assert "Return this study" not in banner  # the place is gone already


def test_the_api_refuses_examples_and_verdicts(late, api, annotator, hate_round):
    client, participation, fields, deadline = late
    example = make_example(hate_round, annotator)
    serve(example, participation.user)
    written = api(participation.user).post(
        "/api/tasks/hate-speech/examples/", {"statement": "keep them out", "label": "hateful"}, format="json"
    )
    assert written.status_code == 403
    assert written.json() == {"detail": _message(deadline), "code": "study", "url": None}
    voted = api(participation.user).post(
        f"/api/examples/{example.pk}/validations/", {"verdict": "correct"}, format="json"
    )
    assert voted.status_code == 403 and voted.json()["code"] == "study"
    assert Example.objects.filter(annotator=participation.user).count() == 1
    assert example.validations.count() == 0
    assert _paid(participation) == [("example", Decimal("0.5000"))]


def test_the_validate_page_refuses(late, annotator, hate_round):
    client, participation, fields, deadline = late
    make_example(hate_round, annotator, model_wrong=True)
    page = client.get(reverse("validation:validate", args=["hate-speech"]), follow=True)
    assert f"ran out at {deadline} UTC" in page.text
    assert 'name="verdict"' not in page.text
