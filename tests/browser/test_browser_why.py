"""See why the model decided: token attributions on the create page's in-page verdict, with a real
(tiny, random) classifier as the target, on a statement with emoji.

The preprocessing reads emoji as their names (":snake:"), but the highlighted text is the annotator's
own: its text content must equal the statement, emoji included.
"""

from __future__ import annotations

from django.urls import reverse
from playwright.sync_api import expect

from annotation.models import Example

STATEMENT = "Those 🐍 people 👨‍👩‍👧 should leave"


def test_the_verdict_explains_which_words_drove_the_model(run, tiny_registered_model, annotator):
    page = run.page_for(annotator)
    page.goto(reverse("annotation:create", args=["hate-speech"]))
    page.get_by_label("Statement").fill(STATEMENT)
    page.locator("input[name=label][value=hateful]").check()
    page.get_by_role("button", name="Submit to the model").click()
    verdict = page.locator("#verdict")
    expect(verdict.locator(".outcome")).to_be_visible()
    why = verdict.locator("details.why")
    why.locator("summary").click()  # opening it loads the attributions
    attributions = why.locator("section.attributions")
    expect(attributions).to_be_visible(timeout=30_000)
    text = attributions.locator("p.attributions-text")
    expect(text).to_have_count(1)
    assert text.text_content() == STATEMENT  # on the original characters, emoji and all
    assert attributions.locator("mark.attr").count() >= 3
    expect(attributions.locator("ol.attributions-top li").first).to_be_visible()
    expect(attributions.locator(".attributions-check")).to_contain_text("Integrated gradients")
    expect(attributions.locator(".attributions-check")).not_to_contain_text("not met here")
    run.check(page, "attributions")

    example = Example.objects.get()
    page.goto(reverse("annotation:outcome", args=[example.pk]))  # the outcome page has it too
    page.locator("details.why summary").click()
    expect(page.locator("details.why section.attributions")).to_be_visible(timeout=30_000)
    run.check(page, "outcome-attributions")
    run.assert_clean()
