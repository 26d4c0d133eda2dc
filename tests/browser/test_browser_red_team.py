"""Red-teaming in a real browser against the real SmolLM2: the answer streams into the page (no reload),
three turns, the rubric; the validator's unanchored rubric; and the same conversation without JavaScript.
Each at both widths (the ``run`` fixture)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.models import Conversation, Example, Turn
from tests.factories.red_team import make_passage, make_red_team_round

URL = "/tasks/red-team/red-team/"


@pytest.fixture
def red_round(transactional_db, smollm2_dir):
    round_ = make_red_team_round(smollm2_dir)
    make_passage(round_)
    return round_


def _send(page, text):
    page.get_by_label("Your message").fill(text)
    page.get_by_role("button", name="Send to the model").click()


#: How long a wait for the model's answer may take: SmolLM2 answers 12 tokens in about a second on a quiet
#: machine, but CI's two test workers (and anything else running) share 2 cores with it.
ANSWER_MS = 60_000


def test_a_streamed_three_turn_conversation_judged_with_the_rubric(run, red_round, annotator):
    page = run.page_for(annotator)
    page.goto(URL)
    run.check(page, "red-team")
    expect(page.locator("#rubric")).to_be_hidden()
    # The page's script asks for the stream: the request carries Accept: text/event-stream.
    with page.expect_request(lambda r: r.url.endswith("/red-team/send/")) as sent:
        _send(page, "How long is the Amazon? 🌊")
    assert "text/event-stream" in sent.value.headers.get("accept", "")
    answer = page.locator("#turns .message.assistant .answer").first
    expect(answer).not_to_be_empty(timeout=ANSWER_MS)
    expect(page.locator(".stream-status")).to_have_text("", timeout=ANSWER_MS)
    assert page.url.endswith(URL)  # no reload, no redirect: the answer came into the page
    expect(page.locator("#rubric")).to_be_visible()
    run.check(page, "first-answer")
    turn = Turn.objects.get()
    expect(answer).to_have_text(turn.answer.strip() or turn.answer)
    _send(page, "Which country? עברית")
    expect(page.locator("#turns .message.assistant .answer")).to_have_count(2, timeout=ANSWER_MS)
    expect(page.locator("#turns .message.assistant .answer").nth(1)).not_to_be_empty(timeout=ANSWER_MS)
    _send(page, "Are you sure?")
    expect(page.locator("#turns .message.assistant .answer")).to_have_count(3, timeout=ANSWER_MS)
    expect(page.get_by_text("This conversation has its 3 messages. Judge the answers below.")).to_be_visible(
        timeout=ANSWER_MS
    )
    expect(page.locator("#send-form")).to_be_hidden()
    assert [t.index for t in Turn.objects.order_by("index")] == [0, 1, 2]
    page.locator("#rubric-supported-2").check()  # "no" (failure)
    page.locator("#rubric-helpful-3").check()
    page.get_by_label("Adds a detail the passage does not give").check()
    run.check(page, "rubric")
    page.get_by_role("button", name="Submit my judgement").click()
    example = Example.objects.get()
    expect(
        page.get_by_text(f"Stored as example {example.pk}: you judged it a failure of the model.")
    ).to_be_visible()
    assert (example.model_wrong, example.tags, example.target) == (
        True,
        ["fabrication"],
        {"supported": "no", "helpful": "3"},
    )
    assert len(example.inputs["messages"]) == 6
    run.check(page, "judged")


def test_without_javascript_the_form_posts_and_the_page_shows_the_whole_answer(run, red_round, annotator):
    page = run.page_for(annotator, javascript=False)
    page.goto(URL)
    _send(page, "Where does the Amazon flow?")
    page.wait_for_url(f"**{URL}#turn-0")
    turn = Turn.objects.get()
    assert turn.status == "answered"
    expect(page.locator("#turn-0 .answer")).to_contain_text(turn.answer.strip().split("\n")[0])
    expect(page.locator("#rubric")).to_be_visible()
    run.check(page, "no-js-answer", axe=False)


def test_the_validator_answers_the_rubric_without_the_authors_answers(run, red_round, annotator, validator):
    conversation = Conversation.objects.create(
        round=red_round, annotator=annotator, model=red_round.targets.get().model
    )
    example = Example.objects.create(
        round=red_round,
        annotator=annotator,
        context=red_round.contexts.get(),
        inputs={
            "messages": [
                {"role": "user", "content": "How long?"},
                {"role": "assistant", "content": "9,000 km."},
            ]
        },
        target={"supported": "no", "helpful": "4"},
        model_wrong=True,
        tags=["contradiction"],
        metadata={"mode": "conversation", "conversation": conversation.pk, "turns": 1},
    )
    page = run.page_for(validator)
    page.goto("/tasks/red-team/validate/")
    expect(page.get_by_role("heading", name="Is the model's output good enough?")).to_be_visible()
    expect(page.get_by_text("9,000 km.")).to_be_visible()
    assert "Contradicts the passage" not in page.content()
    run.check(page, "validate-rubric")
    page.locator("#rubric-supported-2").check()
    page.locator("#rubric-helpful-2").check()
    page.get_by_role("button", name="Submit my judgement").click()
    expect(page.get_by_text("Verdict recorded.")).to_be_visible()
    vote = example.validations.get()
    assert (vote.verdict, vote.rubric_answers) == ("correct", {"supported": "no", "helpful": "2"})
