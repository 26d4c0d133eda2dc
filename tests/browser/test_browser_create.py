"""The create page in a real browser: fool the model, then not, in-page, try a variation, retract.

The target is ``rule_model`` (tests/helpers/fakes.py): it says "hateful" exactly when the statement
contains "hate", so which example fools it is known in advance. The live server runs in this process,
so the fixture's monkeypatched ``predict`` answers its requests too.

The NLI tests (tests/browser/nli.py) check that the form carries its premise: Back never offers a
hypothesis on a premise it was not written for, with or without the back-forward cache.
"""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from annotation.models import Example
from tests.browser.helpers import CHROMIUM, CHROMIUM_ARGS, VIEWPORTS, BrowserRun, slug
from tests.browser.nli import HYPOTHESIS, nli_with_two_premises

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


# --- NLI: the form carries its premise (issue 29) --------------------------------------------------------


def test_back_after_a_submit_never_offers_the_old_hypothesis_on_a_new_premise(
    run, nli_task, annotator, monkeypatch
):
    contexts = nli_with_two_premises(nli_task, monkeypatch)
    page = run.page_for(annotator)
    page.goto(reverse("annotation:create", args=["nli"]))
    premise = page.locator("form.example-form section.context p")
    first = contexts[premise.inner_text()]
    hypothesis = page.get_by_role("textbox", name="Hypothesis")
    hypothesis.fill(HYPOTHESIS)
    page.locator("input[name=label][value=entailment]").check()
    page.get_by_role("button", name="Submit to the model").click()
    expect(page.locator("#verdict")).to_contain_text("You fooled the model!")

    page.get_by_role("link", name="Open this example's page").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Your example")
    page.go_back()  # the create page again: the least-used rule serves the other premise
    [second] = [c for c in contexts.values() if c != first]
    expect(premise).to_have_text(second.data["premise"])
    assert page.locator("input[name=context]").input_value() == str(second.pk)
    # ...with an empty form: the hypothesis written for the first premise is not ready to send on it
    expect(hypothesis).to_have_value("")
    expect(page.locator("input[name=label]:checked")).to_have_count(0)
    run.check(page, "back-on-a-new-premise")
    assert [(e.context_id, e.inputs["hypothesis"]) for e in Example.objects.all()] == [(first.pk, HYPOTHESIS)]
    run.assert_clean()


def test_a_form_restored_onto_another_premise_is_refused_and_shown_with_its_own(
    run, nli_task, annotator, monkeypatch
):
    """A browser that restores hidden fields too (as some do on Back or reload) can leave another premise's
    id in the form of a page that shows this one. On ``pageshow`` the page's script puts back the id of
    the premise shown, so the form is sent with the premise the writer sees (and the server, which finds
    the premise in the form's signed stamp, would refuse a form whose id differs from it)."""
    contexts = nli_with_two_premises(nli_task, monkeypatch)
    page = run.page_for(annotator)
    page.goto(reverse("annotation:create", args=["nli"]))
    premise = page.locator("form.example-form section.context p")
    shown = contexts[premise.inner_text()]
    [other] = [c for c in contexts.values() if c != shown]
    page.get_by_role("textbox", name="Hypothesis").fill(HYPOTHESIS)
    page.locator("input[name=label][value=entailment]").check()
    # as a browser restoring the form onto another page would: the hidden id is the other premise's
    page.evaluate(f"document.querySelector('input[name=context]').value = '{other.pk}'")
    page.evaluate("window.dispatchEvent(new PageTransitionEvent('pageshow', {persisted: true}))")
    assert page.locator("input[name=context]").input_value() == str(shown.pk)  # put back by the script
    page.get_by_role("button", name="Submit to the model").click()
    expect(page.locator("#verdict")).to_contain_text("You fooled the model!")
    assert [e.context_id for e in Example.objects.all()] == [shown.pk]
    run.assert_clean()


@pytest.fixture
def bfcache_run(request, browser, live_server, transactional_db):
    """A ``BrowserRun`` at the laptop viewport in a Chromium that keeps pages in its back-forward cache:
    Playwright starts Chromium with ``--disable-back-forward-cache``, which this one leaves out."""
    chromium = browser.browser_type.launch(
        executable_path=str(CHROMIUM),
        headless=True,
        args=CHROMIUM_ARGS,
        ignore_default_args=["--disable-back-forward-cache"],
    )
    width, height = VIEWPORTS["1366"]
    browser_run = BrowserRun(chromium, live_server.url, slug(request.node.name), width, height)
    yield browser_run
    browser_run.close()
    chromium.close()


def test_back_from_the_back_forward_cache_shows_the_premise_of_its_form(
    bfcache_run, nli_task, annotator, monkeypatch
):
    contexts = nli_with_two_premises(nli_task, monkeypatch)
    page = bfcache_run.page_for(annotator)
    page.goto(reverse("annotation:create", args=["nli"]))
    premise = page.locator("form.example-form section.context p")
    first = contexts[premise.inner_text()]
    page.get_by_role("textbox", name="Hypothesis").fill(HYPOTHESIS)
    page.locator("input[name=label][value=entailment]").check()
    page.get_by_role("button", name="Submit to the model").click()
    expect(page.locator("#verdict")).to_contain_text("You fooled the model!")
    page.evaluate("window.__stayedInTheCache = true")

    page.get_by_role("link", name="Open this example's page").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Your example")
    page.go_back(wait_until="commit")  # a page from the cache fires no load event
    expect(premise).to_have_text(first.data["premise"])
    assert page.evaluate("window.__stayedInTheCache === true")  # the very page, from the cache
    # the page as it was: the premise, its id and the text kept for a variation, all of the first premise
    assert page.locator("input[name=context]").input_value() == str(first.pk)
    expect(page.get_by_role("textbox", name="Hypothesis")).to_have_value(HYPOTHESIS)
    page.get_by_role("textbox", name="Hypothesis").fill("Leeds had a dry day.")
    page.get_by_role("button", name="Submit to the model").click()
    expect(page.locator("#verdict .statement")).to_have_text("Leeds had a dry day.")
    stored = [(e.context_id, e.inputs["hypothesis"]) for e in Example.objects.order_by("pk")]
    assert stored == [(first.pk, HYPOTHESIS), (first.pk, "Leeds had a dry day.")]
    bfcache_run.assert_clean()


def test_a_premise_whose_round_closed_is_refused_and_the_text_kept_apart(
    run, nli_task, annotator, monkeypatch
):
    from tests.factories.tasks import ContextFactory, open_round

    nli_with_two_premises(nli_task, monkeypatch)
    page = run.page_for(annotator)
    page.goto(reverse("annotation:create", args=["nli"]))
    written_for = page.locator("form.example-form section.context p").inner_text()
    hypothesis = page.get_by_role("textbox", name="Hypothesis")
    hypothesis.fill(HYPOTHESIS)
    page.locator("input[name=label][value=entailment]").check()
    round_2 = open_round(nli_task, number=2)  # while the annotator writes, round 2 opens
    ContextFactory(round=round_2, data={"premise": "A cat sat on the warm mat."})
    page.get_by_role("button", name="Submit to the model").click()  # refused; the script sends it plainly
    expect(page.get_by_role("alert")).to_have_text(
        "The premise you wrote for is no longer available (round 1 closed and round 2 opened while you "
        "were writing), so your example was not saved."
    )
    unsaved = page.locator("section.unsaved")
    expect(unsaved).to_contain_text(written_for)
    expect(unsaved).to_contain_text(HYPOTHESIS)
    expect(page.locator("form.example-form section.context p")).to_have_text("A cat sat on the warm mat.")
    expect(hypothesis).to_have_value("")
    expect(page.locator("input[name=label]:checked")).to_have_count(0)
    run.check(page, "premise-gone")
    assert not Example.objects.exists()
    run.assert_clean()
