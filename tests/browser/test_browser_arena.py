"""The arena in a real browser against the real SmolLM2 (two models of the same weights, one with a
pirate's system prompt): a person writes a prompt, reads the two anonymous answers side by side,
votes and continues with a next message (a vote per turn), votes the second turn, and sees the two names
revealed; then the public ranking. At both widths (the ``run`` fixture)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from generative_bench.models import Battle
from tests.factories.arena import NAME_A, NAME_B, make_arena

URL = "/tasks/red-team/arena/"


@pytest.fixture
def arena(transactional_db, smollm2_dir):
    return make_arena(smollm2_dir)


def test_arena_write_a_prompt_vote_and_see_the_names(run, arena, annotator):
    page = run.page_for(annotator)
    page.goto(URL)
    run.check(page, "arena")
    page.get_by_label("Your prompt").fill("How long is the Amazon? 🌊 עברית")
    # The form posts and the page comes back once both models answered (seconds on a busy machine):
    # the click does not wait for that navigation, the wait below does, with room.
    page.get_by_role("button", name="Send to two models").click(no_wait_after=True)
    page.wait_for_url("**/arena/battles/*/", timeout=180_000)
    battle = Battle.objects.get()
    assert battle.status == "ready"
    expect(page.get_by_role("heading", name="Answer A")).to_be_visible()
    expect(page.get_by_role("heading", name="Answer B")).to_be_visible()
    html = page.content()
    assert NAME_A not in html and NAME_B not in html
    run.check(page, "answers")

    page.get_by_label("Your next message").fill("And in miles?")
    page.get_by_role("button", name="B is better").click(no_wait_after=True)
    page.wait_for_url(lambda url: f"/battles/{battle.pk}/" not in url, timeout=180_000)
    expect(page.get_by_text("Your vote is recorded: B is better. Next turn:")).to_be_visible()
    expect(page.get_by_text("Turn 2 of at most 3")).to_be_visible()
    html = page.content()
    assert NAME_A not in html and NAME_B not in html  # still blind on the second turn
    battle.refresh_from_db()
    assert battle.vote == "b" and not battle.revealed
    battle = battle.continuation
    assert battle.messages[-1] == {"role": "user", "content": "And in miles?"}
    run.check(page, "second turn")

    page.get_by_role("button", name="A is better").click()
    expect(page.get_by_text("Your vote is recorded: A is better.")).to_be_visible()
    expect(page.locator(".reveal-a")).to_have_text(battle.model_a.name)
    expect(page.locator(".reveal-b")).to_have_text(battle.model_b.name)
    expect(page.get_by_role("heading", name=f"Answer A ({battle.model_a.name})")).to_be_visible()
    run.check(page, "revealed")

    page.get_by_role("link", name="See the ranking").click()
    expect(page.get_by_role("table", name="Models by Bradley-Terry score, best first")).to_be_visible()
    expect(page.get_by_text("2 votes counted. No vote left out.")).to_be_visible()
    run.check(page, "ranking")
