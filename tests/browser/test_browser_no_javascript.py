"""With JavaScript off, the pages still work as plain forms: write an example, then validate it.

No script runs in these pages (``java_script_enabled=False``), so the create form POSTs and redirects
to the outcome page, and the verdict buttons submit at once, the corrected-label list visible from the
start. axe-core needs script, so these pages are screenshotted only (the other tests audit them). On NLI,
Back after a submit serves the next premise with an empty form (tests/browser/nli.py).
"""

from __future__ import annotations

import re

from django.urls import reverse
from playwright.sync_api import expect

from annotation.models import Example
from tests.browser.nli import HYPOTHESIS, nli_with_two_premises
from tests.factories.accounts import UserFactory
from validation.models import Validation

FOOLS = "Those people are vermin and should leave"  # the rule model says not-hateful


def test_create_and_validate_without_javascript(run, rule_model, annotator, validator):
    page = run.page_for(annotator, javascript=False)
    page.goto(reverse("annotation:create", args=["hate-speech"]))
    page.get_by_label("Statement").fill(FOOLS)
    page.locator("input[name=label][value=hateful]").check()
    page.get_by_role("button", name="Submit to the model").click()
    example = Example.objects.get()
    expect(page).to_have_url(re.compile(re.escape(reverse("annotation:outcome", args=[example.pk])) + "$"))
    expect(page.get_by_text("You fooled the model!")).to_be_visible()
    run.check(page, "outcome", axe=False)
    assert (example.inputs, example.target, example.model_wrong) == ({"statement": FOOLS}, "hateful", True)

    validate = reverse("validation:validate", args=["hate-speech"])
    page = run.page_for(validator, javascript=False)
    page.goto(validate)
    expect(page.get_by_text(FOOLS)).to_be_visible()
    expect(page.locator(".corrected-label select")).to_be_visible()  # no script hides it
    run.check(page, "validate", axe=False)
    page.get_by_role("button", name=re.compile("^Correct")).click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("Nothing left to validate")

    second = UserFactory(username="validator2")
    page = run.page_for(second, javascript=False)
    page.goto(validate)
    page.locator(".corrected-label select").select_option("not-hateful")
    page.get_by_role("button", name=re.compile("^Incorrect")).click()  # submits at once without script
    expect(page.get_by_role("heading", level=1)).to_contain_text("Nothing left to validate")
    run.check(page, "validated", axe=False)

    verdicts = Validation.objects.order_by("pk").values_list(
        "validator__username", "verdict", "corrected_label"
    )
    assert list(verdicts) == [("validator", "correct", ""), ("validator2", "incorrect", "not-hateful")]
    example.refresh_from_db()
    assert example.status == Example.Status.PENDING  # 1 correct, 1 incorrect: no quorum of 3 yet
    run.assert_clean()


def test_back_and_send_again_without_javascript_never_saves_on_another_premise(
    run, nli_task, annotator, monkeypatch
):
    contexts = nli_with_two_premises(nli_task, monkeypatch)
    page = run.page_for(annotator, javascript=False)
    page.goto(reverse("annotation:create", args=["nli"]))
    premise = page.locator("form.example-form section.context p")
    first = contexts[premise.inner_text()]
    hypothesis = page.get_by_role("textbox", name="Hypothesis")
    hypothesis.fill(HYPOTHESIS)
    page.locator("input[name=label][value=entailment]").check()
    page.get_by_role("button", name="Submit to the model").click()
    expect(page.get_by_text("You fooled the model!")).to_be_visible()

    page.go_back()  # the create page is asked again: it serves the other premise
    [second] = [c for c in contexts.values() if c != first]
    expect(premise).to_have_text(second.data["premise"])
    expect(hypothesis).to_have_value("")  # not the hypothesis written for the first premise
    expect(page.locator("input[name=label]:checked")).to_have_count(0)
    run.check(page, "back", axe=False)
    # sending the page as it is stores nothing on the second premise
    page.get_by_role("button", name="Submit to the model").click()
    assert [(e.context_id, e.inputs["hypothesis"]) for e in Example.objects.all()] == [(first.pk, HYPOTHESIS)]
    run.assert_clean()
