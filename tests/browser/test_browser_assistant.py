"""The annotation assistant in a real browser (docs/domain.md, "Annotation assistants"): a writer in the
assistant's arm asks for a suggestion, takes it, edits it and submits; the example records the
suggestion and the edit distance. The assistant is a model on a chat server on loopback (its answer
chosen by the test); the task's owner then sees the arms on the task page.
"""

from __future__ import annotations

import copy

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from annotation.assistant import services as assistant
from annotation.models import Example, Suggestion
from tasks.builtin_configs import HATE_SPEECH_CONFIG
from tasks.models import Task
from tests.factories.accounts import UserFactory
from tests.factories.tasks import open_round
from tests.generative_bench.judge_world import chat_model, red_team_task
from tests.helpers.chat_server import ChatServer

SUGGESTED = "Those people ruin every city they move to."
ARMS = [
    {"name": "none", "share": 1},
    {"name": "helper", "share": 1, "model": "red-team/helper", "prompt": "Write one {label} statement."},
]


@pytest.fixture
def study(transactional_db, rule_model):
    with ChatServer(None) as server:
        server.reply = lambda request: SUGGESTED
        chat_model(red_team_task(), "helper", server.base_url)
        config = copy.deepcopy(HATE_SPEECH_CONFIG)
        config["assistant"] = {"arms": ARMS}
        task = Task.objects.create(slug="hate-arms", name="Hate speech with an assistant", config=config)
        round_ = open_round(task)
        rule_model.task = task  # the stand-in target (tests/helpers/fakes.py) answers for this task too
        rule_model.save(update_fields=["task"])
        from models_registry.round_targets import set_round_targets

        set_round_targets(round=round_, models=[rule_model])
        yield task


def _in_arm(task, arm: str):
    for i in range(40):
        person = UserFactory(username=f"{arm}{i}")
        if assistant.arm_for(task, person).name == arm:
            return person
    raise AssertionError(arm)


def test_take_and_edit_a_suggestion(run, study, owner):
    writer = _in_arm(study, "helper")
    page = run.page_for(writer)
    page.goto(reverse("annotation:create", args=[study.slug]))
    section = page.locator("#assistant")
    expect(section).to_be_visible()
    page.locator("input[name=label][value=hateful]").check()
    page.get_by_role("button", name="Suggest an example").click()
    expect(section.locator(".suggestion-text")).to_have_text(SUGGESTED)
    run.check(page, "suggested")
    page.get_by_role("button", name="Use this suggestion").click()
    statement = page.get_by_label("Statement")
    expect(statement).to_have_value(SUGGESTED)
    statement.fill(SUGGESTED.replace("city", "town"))
    page.get_by_role("button", name="Submit to the model").click()
    expect(page.locator("#verdict")).to_contain_text("You fooled the model!")  # no "hate": not-hateful
    suggestion = Suggestion.objects.get()
    assert suggestion.label == "hateful" and suggestion.kept_distance == 4
    assert suggestion.example == Example.objects.get()
    expect(section.locator(".suggestion-text")).to_be_hidden()  # a suggestion goes with one example

    other = _in_arm(study, "none")
    page = run.page_for(other)
    page.goto(reverse("annotation:create", args=[study.slug]))
    expect(page.get_by_label("Statement")).to_be_visible()
    expect(page.locator("#assistant")).to_have_count(0)

    study.owners.add(owner)
    page = run.page_for(owner)
    page.goto(reverse("tasks:detail", args=[study.slug]))
    expect(page.locator("table.assistant-arms")).to_contain_text("Share of suggestions kept")
    run.check(page, "arms")
