"""Uncertainty mode in a real browser (docs/domain.md, "Uncertainty mode"): the create page shows the
target's confidence as the writer pauses typing, the verdict says whether it was unsure, a validator
gives the label without seeing the author's, and the task page draws the round's histogram.

The target is a stand-in whose top probability is written in the statement ("p=0.55 ..."); the live
server runs in this process, so the monkeypatched ``predict`` answers its requests too.
"""

from __future__ import annotations

import copy

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from annotation.models import Example
from tasks.builtin_configs import HATE_SPEECH_CONFIG
from tasks.models import Task
from tests.factories.models_registry import make_stand_in
from tests.factories.tasks import open_round
from tests.helpers.fakes import probability_predict
from validation.models import Validation


@pytest.fixture
def unsure_task(transactional_db, monkeypatch):
    from models_registry import inference

    monkeypatch.setattr(inference, "predict", probability_predict)
    config = copy.deepcopy(HATE_SPEECH_CONFIG)
    config["uncertainty"] = {"measure": "top_probability", "threshold": 0.6}
    task = Task.objects.create(
        slug="hate-unsure", name="Hate speech, unsure", config=config, validation_quorum=1
    )
    make_stand_in(task, open_round(task))
    return task


def test_write_an_unsure_example_then_validate_it_unanchored(run, unsure_task, annotator, validator):
    page = run.page_for(annotator)
    page.goto(reverse("annotation:create", args=[unsure_task.slug]))
    expect(page.get_by_role("heading", name="Your goal: make the model unsure")).to_be_visible()
    statement = page.get_by_label("Statement")
    live = page.locator("#confidence-live")
    statement.fill("p=0.82 they should all go")
    expect(live).to_contain_text("top probability 0.82")
    expect(live).to_contain_text("Not yet: the goal is top probability under 0.6.")
    statement.fill("p=0.55 they should all go")  # the pause after typing asks again
    expect(live).to_contain_text("top probability 0.55")
    expect(live).to_contain_text("this example meets the goal")
    run.check(page, "live-confidence")
    assert Example.objects.count() == 0  # asking stores nothing
    page.locator("input[name=label][value=hateful]").check()
    page.get_by_role("button", name="Submit to the model").click()
    verdict = page.locator("#verdict")
    expect(verdict).to_contain_text("You made the model unsure!")
    expect(verdict).to_contain_text("top probability: 0.550 (unsure)")
    run.check(page, "unsure")
    example = Example.objects.get()
    assert example.model_unsure is True

    page = run.page_for(validator)
    page.goto(reverse("validation:validate", args=[unsure_task.slug]))
    expect(page.get_by_role("heading", name="Which label is right?")).to_be_visible()
    expect(page.get_by_text("p=0.55 they should all go")).to_be_visible()
    expect(page.get_by_text("The author's intended")).to_have_count(0)
    expect(page.get_by_text("Show the model's answer")).to_have_count(0)
    run.check(page, "validate")
    page.get_by_label("not-hateful").check()
    with page.expect_navigation():
        page.get_by_role("button", name="Submit my label").click()
    vote = Validation.objects.get()
    assert (vote.verdict, vote.given_target, vote.corrected_label) == (
        "incorrect",
        "not-hateful",
        "not-hateful",
    )
    example.refresh_from_db()
    assert example.status == Example.Status.VALIDATED_INCORRECT  # quorum 1

    page.goto(reverse("tasks:detail", args=[unsure_task.slug]))
    expect(page.locator("svg.histogram")).to_be_visible()
    expect(page.locator("table.uncertainty-stats")).to_contain_text("100%")  # 1 of 1 unsure
    run.check(page, "task-page")
