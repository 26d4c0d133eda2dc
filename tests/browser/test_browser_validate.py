"""Validate with the keyboard as three users until the quorum (3 matching verdicts) settles the example.

The first validator presses 2 (Incorrect: the corrected-label list opens), 2 again (recorded), then u
(undo, within its window) and 1 (Correct); the other two press 1. Each key press submits the verdict
form as the buttons would (validation/static/validation/verdict_keys.js).
"""

from __future__ import annotations

from django.urls import reverse
from playwright.sync_api import expect

from annotation.models import Example
from annotation.services import create_example
from tests.factories.accounts import UserFactory
from validation.models import Validation

STATEMENT = "Those people are vermin and should leave"


def _press(page, key: str) -> None:
    """Press ``key`` and wait for the page the verdict form's POST/redirect/GET leads to."""
    with page.expect_navigation():
        page.keyboard.press(key)


def test_three_validators_settle_an_example_with_the_keyboard(
    run, settings, rule_model, hate_task, annotator, validator
):
    settings.DYNABENCH_VALIDATION_UNDO_SECONDS = 600  # the undo window never closes during the test
    example, _ = create_example(
        task=hate_task, annotator=annotator, inputs={"statement": STATEMENT}, target="hateful"
    )
    assert example.model_wrong is True  # the rule model says not-hateful
    validate = reverse("validation:validate", args=["hate-speech"])
    validators = [validator, UserFactory(username="validator2"), UserFactory(username="validator3")]

    page = run.page_for(validators[0])
    page.goto(validate)
    expect(page.get_by_text(STATEMENT)).to_be_visible()
    run.check(page, "validate")
    corrected = page.locator(".corrected-label")
    expect(corrected).to_be_hidden()  # until Incorrect is chosen
    page.keyboard.press("2")
    expect(corrected).to_be_visible()
    run.check(page, "incorrect-chosen")
    _press(page, "2")  # the focus is in the label list; 2 records Incorrect (no corrected label)
    assert list(Validation.objects.values_list("validator__username", "verdict")) == [
        ("validator", "incorrect")
    ]
    expect(page.locator("form.undo")).to_contain_text("incorrect", ignore_case=True)
    run.check(page, "after-verdict")
    _press(page, "u")
    assert Validation.objects.count() == 0
    expect(page.get_by_text(STATEMENT)).to_be_visible()  # the example is served again
    _press(page, "1")
    assert list(Validation.objects.values_list("validator__username", "verdict")) == [
        ("validator", "correct")
    ]

    for n, user in enumerate(validators[1:], start=2):
        page = run.page_for(user)
        page.goto(validate)
        expect(page.get_by_text(STATEMENT)).to_be_visible()
        _press(page, "1")
        example.refresh_from_db()
        assert example.status == ("validated_correct" if n == 3 else "pending")
    assert Validation.objects.filter(example=example, verdict="correct").count() == 3
    run.check(page, "settled")

    # the quorum has spoken: the last validator cannot take it back
    page.keyboard.press("u")
    page.wait_for_load_state("load")
    example.refresh_from_db()
    assert example.status == Example.Status.VALIDATED_CORRECT
    assert Validation.objects.filter(example=example).count() == 3
    run.assert_clean()
