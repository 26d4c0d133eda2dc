"""Several models in one conversation in a real browser: the first message's two answers stream into
their own columns, unnamed; the page then shows a slider and the rubric under each, and the choice; the
conversation goes on with the chosen model and is judged; the task page shows the per-model table and its
chart. Each at both widths (the ``run`` fixture)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.models import CandidateRating, Conversation, Example, Turn
from tests.factories.red_team import make_passage, make_side_by_side_round
from tests.helpers.chat_server import ChatServer

URL = "/tasks/red-sbs/red-team/"
ANSWER_MS = 30_000


@pytest.fixture
def server():
    with ChatServer(None) as running:
        running.reply = lambda body: f"Answer {len(body['messages'])}: the river is long. 🌊"
        yield running


@pytest.fixture
def sbs_round(transactional_db, server):
    round_ = make_side_by_side_round(server.base_url)
    make_passage(round_)
    return round_


def test_two_answers_side_by_side_rated_chosen_and_the_conversation_goes_on(
    run, sbs_round, annotator, server
):
    page = run.page_for(annotator)
    page.goto(URL)
    expect(page.get_by_text("Your first message goes to 2 models at once, not named.")).to_be_visible()
    page.get_by_label("Your message").fill("How long is the Amazon?")
    page.get_by_role("button", name="Send to the model").click()
    # The stream fills both columns, then the page comes back with the rating form.
    expect(page.locator("#rate-form")).to_be_visible(timeout=ANSWER_MS)
    expect(page.locator(".side-answer")).to_have_count(2)
    for letter in "AB":
        expect(page.locator(f"#answer-{letter} .answer")).to_have_text("Answer 2: the river is long. 🌊")
    assert not page.get_by_text("alpha").count() and not page.get_by_text("gamma").count()
    # Side by side (wide), the ratings start on one line even when one answer is much longer.
    page.locator("#answer-A .answer").evaluate("p => { p.textContent = p.textContent.repeat(12); }")
    tops = [page.locator(f"#answer-{letter} fieldset.rating").bounding_box()["y"] for letter in "AB"]
    if page.viewport_size["width"] >= 1000:
        assert tops[0] == pytest.approx(tops[1], abs=1)
    run.check(page, "side-by-side-answers")
    # A slider not yet touched says so, and is no rating: the form is refused until it is set.
    expect(page.locator("#A-score-value")).to_have_text("not rated yet")
    page.locator("#A-score").fill("30")
    expect(page.locator("#A-score-value")).to_have_text("30")
    for letter in "AB":
        page.locator(f"#{letter}-rubric-supported-1").check()  # yes
        page.locator(f"#{letter}-rubric-helpful-4").check()
    page.get_by_role("radio", name="Answer B").check()
    page.get_by_role("button", name="Store my ratings and go on").click()
    expect(page.get_by_text("Answer B: give it a rating from 1 to 100")).to_be_visible()
    expect(page.locator("#A-score-value")).to_have_text("30")  # what was set is kept
    page.locator("#B-score").fill("85")
    run.check(page, "side-by-side-rated")
    page.get_by_role("button", name="Store my ratings and go on").click()
    expect(page.get_by_text("You go on with answer B")).to_be_visible()
    expect(
        page.get_by_text("Answer B of 2, the one you chose to go on with (your ratings: A 30, B 85).")
    ).to_be_visible()
    chosen = Turn.objects.get(slot=1)
    assert Conversation.objects.get().model_id == chosen.model_id
    assert sorted(CandidateRating.objects.values_list("score", flat=True)) == [30, 85]
    page.get_by_label("Your message").fill("Are you sure?")
    page.get_by_role("button", name="Send to the model").click()
    expect(page.locator("#turns .message.assistant .answer")).to_have_count(2, timeout=ANSWER_MS)
    assert server.requests[-1]["model"] == chosen.model.name
    page.locator("#rubric-supported-1").check()
    page.locator("#rubric-helpful-4").check()
    page.get_by_role("button", name="Submit my judgement").click()
    example = Example.objects.get()
    assert [a["score"] for a in example.metadata["side_by_side"]] == [30, 85]
    run.check(page, "side-by-side-judged")


def test_without_javascript_the_answers_come_with_the_page(run, sbs_round, annotator):
    page = run.page_for(annotator, javascript=False)
    page.goto(URL)
    page.get_by_label("Your message").fill("Hello")
    page.get_by_role("button", name="Send to the model").click()
    expect(page.locator("#rate-form")).to_be_visible(timeout=ANSWER_MS)
    expect(page.locator(".side-answer")).to_have_count(2)
    for letter in "AB":
        page.locator(f"#{letter}-rubric-supported-1").check()
        page.locator(f"#{letter}-rubric-helpful-4").check()
    page.get_by_role("radio", name="Answer A").check()
    run.check(page, "side-by-side-no-script", axe=False)
    page.get_by_role("button", name="Store my ratings and go on").click()
    expect(page.get_by_text("You go on with answer A")).to_be_visible()
    # The sliders were left where they stood: 50 each.
    assert sorted(CandidateRating.objects.values_list("score", "chosen")) == [(50, False), (50, True)]
    expect(page.locator("#send-form")).to_be_visible()
