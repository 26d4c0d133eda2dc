"""Fixtures of the browser tests: Debian's chromium driven by Playwright, against pytest-django's live server.

``browser`` is one headless Chromium for this folder; ``run`` a ``BrowserRun`` (tests/browser/helpers.py)
per test and viewport, so every test that takes ``run`` runs at 1366x900 and at 390x844. The live
server (``live_server``: a thread of this process, serving static files through the staticfiles
handler) sees the test's data because these tests use ``transactional_db``, and monkeypatches made by
fixtures (e.g. ``rule_model``) apply to it.

Missing chromium, axe-core or playwright skip these tests on a developer's machine and fail them in
CI (``CI`` set), with what to install.

Every test of this folder is marked ``browser`` (``make test-fast`` leaves them out: docs/testing.md).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.browser.helpers import (
    CHROMIUM,
    CHROMIUM_ARGS,
    VIEWPORTS,
    BrowserRun,
    install_hint,
    missing_requirements,
    slug,
)

# The live server listens on the IPv4 loopback (pytest-django's default name, localhost, may also
# resolve to ::1); --liveserver or an address set in the environment wins.
os.environ.setdefault("DJANGO_LIVE_TEST_SERVER_ADDRESS", "127.0.0.1")


BROWSER_TESTS = Path(__file__).resolve().parent


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects by marker
def pytest_collection_modifyitems(config, items):
    """Mark ``browser`` every test of this folder (the hook sees the whole session's items)."""
    for item in items:
        if BROWSER_TESTS in Path(item.path).resolve().parents:
            item.add_marker(pytest.mark.browser)


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


@pytest.fixture(scope="package")
def browser():
    """One headless Debian chromium for the tests of this folder (launched in about a second).

    Playwright's sync API keeps an asyncio event loop running on the test thread while it is started,
    and Django refuses ORM calls from a thread with a running loop (SynchronousOnlyOperation). The
    tests' ORM calls are plain synchronous code that never overlaps the loop, so the check is turned
    off (DJANGO_ALLOW_ASYNC_UNSAFE) while the browser runs; both end with this folder's last test, so
    the tests after it see neither the loop nor the setting.
    """
    missing = missing_requirements()
    if missing:
        message = f"missing {', '.join(missing)}: {install_hint()}"
        if _in_ci():
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


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Keep each phase's report on the item, so ``run`` knows at teardown whether the test failed."""
    report = yield
    setattr(item, f"_browser_report_{report.when}", report)
    return report


@pytest.fixture(params=list(VIEWPORTS), ids=[f"{w}px" for w in VIEWPORTS])
def run(request, browser, live_server, transactional_db):
    """The test's ``BrowserRun`` at one viewport.

    At teardown, findings the test left unchecked (after its last ``assert_clean``) fail it; when the
    test has already failed they are printed instead, so one failure is not reported twice.
    """
    width, height = VIEWPORTS[request.param]
    test_name = slug(request.node.originalname)
    browser_run = BrowserRun(browser, live_server.url, test_name, width, height)
    yield browser_run
    browser_run.close()
    call = getattr(request.node, "_browser_report_call", None)
    if call is not None and call.failed:
        for finding in browser_run.findings:
            print(f"browser finding after the failure: {finding}")
        return
    browser_run.assert_clean()
