"""The study banner in a real browser: the create page's in-page submit refreshes it, with no reload, and
it points on to the validate page once the examples are written (Debian's chromium, as tests/browser/)."""

from __future__ import annotations

import os
from urllib.parse import urlencode

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from tests.browser.helpers import (
    CHROMIUM,
    CHROMIUM_ARGS,
    VIEWPORTS,
    BrowserRun,
    install_hint,
    missing_requirements,
)
from tests.factories.crowd import PROLIFIC_IDS, make_study

os.environ.setdefault("DJANGO_LIVE_TEST_SERVER_ADDRESS", "127.0.0.1")


@pytest.fixture(scope="module")
def browser():
    """One headless Debian chromium for this module, stopped at its end (before any other browser test
    starts its own: Playwright's sync API allows one at a time). As tests/browser/conftest.py: the ORM's
    async check is off while Playwright's event loop runs; missing requirements fail in CI, else skip."""
    missing = missing_requirements()
    if missing:
        message = f"missing {', '.join(missing)}: {install_hint()}"
        if os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    playwright = sync_playwright().start()
    try:
        chromium = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield chromium
        finally:
            chromium.close()
    finally:
        playwright.stop()
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture(params=list(VIEWPORTS), ids=[f"{w}px" for w in VIEWPORTS])
def run(request, browser, live_server, transactional_db):
    """A ``BrowserRun`` (tests/browser/helpers.py) at each viewport; its findings fail the test."""
    width, height = VIEWPORTS[request.param]
    browser_run = BrowserRun(browser, live_server.url, "study-banner", width, height)
    yield browser_run
    browser_run.close()
    browser_run.assert_clean()


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
