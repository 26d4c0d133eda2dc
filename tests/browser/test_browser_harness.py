"""The harness itself: a page with known defects yields exactly the findings that fail a test.

The page is served by Playwright's request interception at the live server's address (no request
leaves the browser), with the site's kind of policy, ``script-src 'self'``. Its defects, by hand: an
image without alt text and a button without a name (axe: image-alt and button-name, both critical), an
inline script (refused by the policy), an uncaught error thrown by a script, and a 2000 px wide box in
a page without margins (2000 - 1366 = 634 px too wide at 1366, 2000 - 390 = 1610 px at 390).
"""

from __future__ import annotations

import pytest

BROKEN = """<!doctype html><html lang="en"><head><title>Broken</title></head>
<body style="margin: 0"><main><h1>Broken on purpose</h1>
<img src="/nothing.png"><button></button>
<script>document.title = "inline ran";</script>
<div style="width: 2000px">wide</div></main></body></html>"""


def test_a_broken_page_gives_each_finding(run):
    page = run.page_for()
    url = f"{run.base_url}/__harness__/"
    page.route(
        url,
        lambda route: route.fulfill(
            status=200,
            content_type="text/html; charset=utf-8",
            headers={"Content-Security-Policy": "script-src 'self'"},
            body=BROKEN,
        ),
    )
    page.goto(url)
    assert page.title() == "Broken"  # the inline script was refused
    with page.expect_event("pageerror"):
        page.evaluate("setTimeout(() => { throw new Error('thrown on purpose'); })")
    run.check(page, "broken")
    kinds = sorted(finding.kind for finding in run.findings)
    assert kinds == [
        "CSP refusal",
        "axe button-name (critical)",
        "axe image-alt (critical)",
        "page scrolls sideways",
        "script error",
    ]
    sideways = next(f for f in run.findings if f.kind == "page scrolls sideways")
    assert sideways.text.startswith(f"{2000 - run.width}px wider than the {run.width}px viewport")
    with pytest.raises(AssertionError, match="5 browser finding"):
        run.assert_clean()
    assert run.findings == []  # reported once: the fixture's teardown finds nothing left
