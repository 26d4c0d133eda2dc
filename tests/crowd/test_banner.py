"""The study banner after each example (docs/crowd.md, "The banner"): its partial at /study/progress/,
which the create page's in-page submit refreshes, its pointer on to the validate page once the study's
examples are written, and on an empty validate page how many validations the study still needs."""

from __future__ import annotations

import re
from urllib.parse import urlencode

import pytest
from django.urls import reverse

from tests.factories.annotation import make_example
from tests.factories.crowd import PROLIFIC_IDS, make_study

pytestmark = pytest.mark.django_db

CREATE = reverse("annotation:create", args=["hate-speech"])
VALIDATE = reverse("validation:validate", args=["hate-speech"])
PROGRESS = reverse("crowd:progress")


def _enter(client, study, **ids):
    return client.get(f"/study/{study.public_id}/enter/?{urlencode({'key': study.entry_key, **ids})}")


def _join(client, study):
    client.get(f"/study/{study.public_id}/enter/?{urlencode({'key': study.entry_key, **PROLIFIC_IDS})}")
    client.post(f"/study/{study.public_id}/consent/")


def _write_in_page(client, statement: str):
    page = client.get(CREATE)
    form = page.context["form"]
    return client.post(
        CREATE,
        {
            "statement": statement,
            "label": "hateful",
            "client_token": form["client_token"].value(),
            "started": form["started"].value(),
            "round": re.search(r'name="round" value="(\d+)"', page.text).group(1),
        },
        headers={"X-Requested-With": "fetch"},
    )


def test_the_banner_partial_follows_each_example(client, hate_round, rule_model):
    study = make_study(hate_round)
    _join(client, study)
    assert "Study: 0 of 2 examples, 0 of 1 validations" in client.get(PROGRESS).text
    answer = _write_in_page(client, "they are vermin")
    assert answer.status_code == 200 and "create-result" in answer.text
    partial = client.get(PROGRESS)
    assert partial.status_code == 200
    assert "Study: 1 of 2 examples, 0 of 1 validations" in partial.text
    assert "<html" not in partial.text  # the banner alone, for the script to swap in


def test_the_banner_partial_is_empty_for_anyone_without_a_study(client, annotator):
    assert client.get(PROGRESS).content == b""
    client.force_login(annotator)
    assert client.get(PROGRESS).content == b""


def test_the_page_carries_the_refresh_link_and_the_create_script_announces_each_example(client, hate_round):
    study = make_study(hate_round)
    _join(client, study)
    page = client.get(CREATE).text
    assert f'data-refresh="{PROGRESS}"' in page
    assert "crowd/banner.js" in page
    from django.contrib.staticfiles import finders

    create_js = open(finders.find("annotation/create.js"), encoding="utf-8").read()
    banner_js = open(finders.find("crowd/banner.js"), encoding="utf-8").read()
    assert 'new CustomEvent("dynabench:work-sent"' in create_js
    assert '"dynabench:work-sent"' in banner_js


def test_the_banner_points_on_to_validation_once_the_examples_are_written(client, hate_round, rule_model):
    study = make_study(hate_round, validations_required=2)
    _join(client, study)
    assert "validate 2 examples" not in client.get(PROGRESS).text
    _write_in_page(client, "they are vermin")
    _write_in_page(client, "they are a disease")
    banner = client.get(PROGRESS).text
    assert "Study: 2 of 2 examples, 0 of 2 validations" in banner
    assert f'Your examples are done: next, <a href="{VALIDATE}">validate 2 examples</a>.' in banner
    assert "More examples are not paid." in banner
    # The pages say the same; the validate page itself needs no pointer to itself.
    assert f'<a href="{VALIDATE}">validate 2 examples</a>' in client.get(CREATE).text
    assert "Your examples are done" not in client.get(VALIDATE).text


def test_no_pointer_when_the_study_asks_for_no_validations(client, hate_round, rule_model):
    study = make_study(hate_round, validations_required=0)
    _join(client, study)
    _write_in_page(client, "they are vermin")
    _write_in_page(client, "they are a disease")
    banner = client.get(PROGRESS).text
    assert "Your examples are done" not in banner
    assert f'href="/study/{study.public_id}/complete/">Finish</a>' in banner


def test_the_banner_says_when_validations_are_due_and_nothing_is_there(client, hate_round, owner, annotator):
    study = make_study(hate_round, examples_required=0, validations_required=3)
    _enter(client, study, **PROLIFIC_IDS)
    client.post(f"/study/{study.public_id}/consent/")
    page = client.get("/tasks/hate-speech/validate/")
    assert page.status_code == 200
    assert (
        "Your study needs 3 more validations. New examples arrive as other participants write them: "
        "try again in a few minutes, or"
    ) in page.text
    assert "Your study needs" not in client.get("/").text  # only on the empty validate page
    make_example(hate_round, annotator)  # now there is something to validate
    serving = client.get("/tasks/hate-speech/validate/")
    assert "Is the intended label right?" in serving.text
    assert "Your study needs" not in serving.text
