"""The create page in a real browser: fool the model, then not, in-page, try a variation, retract.

The target is ``rule_model`` (tests/helpers/fakes.py): it says "hateful" exactly when the statement
contains "hate", so which example fools it is known in advance. The live server runs in this process,
so the fixture's monkeypatched ``predict`` answers its requests too.
"""

from __future__ import annotations

import re

from django.urls import reverse
from playwright.sync_api import expect

from annotation.models import Example

FOOLS = "Those people are vermin and should leave"  # no "hate": the model says not-hateful
VARIATION = "I hate those people, they are vermin"  # "hate": the model says hateful, as intended


def test_fool_the_model_then_try_a_variation_that_does_not(run, rule_model, annotator):
    create = reverse("annotation:create", args=["hate-speech"])
    page = run.page_for(annotator)
    page.goto(create)
    run.check(page, "create")
    statement = page.get_by_label("Statement")
    submit = page.get_by_role("button", name="Submit to the model")

    reset = page.get_by_role("button", name="Reset the tally")
    expect(reset).to_be_hidden()  # nothing to reset yet

    statement.fill(FOOLS)
    page.locator("input[name=label][value=hateful]").check()
    submit.click()
    verdict = page.locator("#verdict")
    expect(verdict).to_contain_text("You fooled the model!")
    expect(page.locator("#session-tally")).to_have_text("1 of 1 fooled the model in this session.")
    expect(reset).to_be_visible()
    # the verdict came in the page: same URL, the text still in the box, the label still chosen
    assert page.url.endswith(create)
    expect(statement).to_have_value(FOOLS)
    expect(page.locator("input[name=label][value=hateful]")).to_be_checked()
    run.check(page, "fooled")

    statement.fill(VARIATION)  # a variation of the text kept in the box
    submit.focus()
    page.keyboard.press("Enter")  # from the keyboard: the button is disabled while sending
    expect(verdict).to_contain_text("The model got it right.")
    # ...and has the focus back afterwards, so the next Tab goes on from it, not from the page's top
    expect(submit).to_be_focused()
    expect(page.locator("#session-tally")).to_have_text("1 of 2 fooled the model in this session.")
    run.check(page, "variation-not-fooled")

    statement.fill("still writing this one")
    reset.click()  # in the page: the text being written stays
    expect(page.locator("#session-tally")).to_have_text("No examples written in this session yet.")
    expect(reset).to_be_hidden()
    expect(statement).to_have_value("still writing this one")

    page.get_by_role("button", name="Clear for a new example").click()
    expect(statement).to_have_value("")
    expect(verdict).to_be_empty()

    stored = [(e.inputs["statement"], e.target, e.model_wrong) for e in Example.objects.order_by("pk")]
    assert stored == [(FOOLS, "hateful", True), (VARIATION, "hateful", False)]
    first, second = Example.objects.order_by("pk")
    assert first.client_token != second.client_token  # a variation is a new example, not a replay

    # the outcome page of the first one: "Try a variation" prefills the form with it
    page.goto(reverse("annotation:outcome", args=[first.pk]))
    expect(page.locator(".outcome")).to_contain_text("You fooled the model!")
    run.check(page, "outcome")
    page.get_by_role("link", name="Try a variation").click()
    expect(statement).to_have_value(FOOLS)
    expect(page.locator("input[name=label][value=hateful]")).to_be_checked()

    # retracting asks for a confirmation first
    page.goto(reverse("annotation:outcome", args=[second.pk]))
    page.get_by_role("button", name=re.compile("^Retract this example")).click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Retract this example?")
    second.refresh_from_db()
    assert not second.is_retracted  # not before the confirmation
    run.check(page, "retract-confirm")
    page.get_by_role("button", name="Retract", exact=True).click()
    expect(page.get_by_text("You retracted this example")).to_be_visible()
    second.refresh_from_db()
    assert second.is_retracted

    page.get_by_role("link", name=re.compile("My examples")).first.click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("examples")
    run.check(page, "my-examples")
    run.assert_clean()


def test_signed_out_keeps_the_text_and_the_counter_counts_code_points(run, rule_model, annotator, password):
    from django.contrib.sessions.models import Session

    create = reverse("annotation:create", args=["hate-speech"])
    page = run.page_for(annotator)
    page.goto(create)
    statement = page.get_by_label("Statement")
    counter = page.locator("#id_statement-count")
    expect(counter).to_have_text("0 / 2,000")
    statement.fill(FOOLS + " 🐷")  # the pig: one code point, two UTF-16 units
    expect(counter).to_have_text(f"{len(FOOLS) + 2} / 2,000")
    assert statement.get_attribute("maxlength") is None
    page.locator("input[name=label][value=hateful]").check()

    Session.objects.all().delete()  # signed out in another tab: the session is gone
    page.get_by_role("button", name="Submit to the model").click()
    verdict = page.locator("#verdict")
    expect(verdict).to_contain_text(
        "You are signed out. Sign in (link opens in a new tab), then press Submit again: "
        "your text is kept here."
    )
    link = verdict.get_by_role("link", name="Sign in (link opens in a new tab)")
    assert link.get_attribute("target") == "_blank"
    assert link.get_attribute("href") == reverse("account_login")
    assert page.url.endswith(create)  # no fall back to the plain POST
    expect(statement).to_have_value(FOOLS + " 🐷")
    assert Example.objects.count() == 0
    run.check(page, "signed-out")

    # signed in again through the link's new tab (which renews the CSRF cookie): Submit now stores the
    # example kept in the box
    with page.context.expect_page() as opened:
        link.click()
    tab = opened.value
    tab.wait_for_load_state()
    tab.locator("input[name=login]").fill(annotator.username)
    tab.locator("input[name=password]").fill(password)
    tab.locator("form button[type=submit]").click()
    tab.wait_for_url(lambda url: "/accounts/login/" not in url)
    tab.close()
    page.get_by_role("button", name="Submit to the model").click()
    expect(verdict).to_contain_text("You fooled the model!")
    assert [e.inputs["statement"] for e in Example.objects.all()] == [FOOLS + " 🐷"]
    run.assert_clean()
