"""The study banner in a real browser: the create page's in-page submit refreshes it, with no reload, and
it points on to the validate page once the examples are written (the folder's Debian chromium and ``run``)."""

from __future__ import annotations

from urllib.parse import urlencode

from django.urls import reverse
from playwright.sync_api import expect

from tests.factories.crowd import PROLIFIC_IDS, make_study


def test_the_banner_follows_each_example_without_a_reload(run, hate_round, rule_model):
    study = make_study(hate_round, validations_required=1)
    create = reverse("annotation:create", args=["hate-speech"])
    page = run.page_for()
    page.goto(f"/study/{study.public_id}/enter/?{urlencode({'key': study.entry_key, **PROLIFIC_IDS})}")
    page.get_by_role("button", name="I agree, start the study").click()
    page.wait_for_url(f"**{create}")
    banner = page.locator(".study-banner")
    expect(banner).to_contain_text("Study: 0 of 2 examples, 0 of 1 validations")
    loads = []
    page.on("load", lambda _: loads.append(page.url))

    statement = page.get_by_label("Statement")
    for n, text in enumerate(("Those people are vermin", "They should all leave"), start=1):
        statement.fill(text)
        page.locator("input[name=label][value=hateful]").check()
        page.get_by_role("button", name="Submit to the model").click()
        expect(page.locator("#verdict")).to_contain_text("You fooled the model!")
        expect(banner).to_contain_text(f"Study: {n} of 2 examples, 0 of 1 validations")
    expect(banner.get_by_role("link", name="validate 1 example")).to_have_attribute(
        "href", reverse("validation:validate", args=["hate-speech"])
    )
    assert loads == []  # all in the page
    run.check(page, "study-banner-after-two-examples")
