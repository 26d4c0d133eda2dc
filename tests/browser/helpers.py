"""What the browser tests share: the Chromium to launch, viewports, screenshots, axe-core, log-ins.

Playwright for Python drives Debian's ``chromium`` (``/usr/bin/chromium``, or ``$DYNABENCH_CHROMIUM``);
Playwright's own browser download is never used. Each test runs at the two ``VIEWPORTS``; every page
it checks (``BrowserRun.check``) is screenshotted to ``artifacts/screenshots/<test>-<step>-<width>.png``
and audited with axe-core (``node_modules/axe-core``, from package.json): a violation of impact
serious or critical fails the test, listing rule, impact, help and target selectors.

The site's Content-Security-Policy stays on in the browser (unlike ``bypass_csp``): axe is evaluated
through the DevTools protocol, which the policy does not govern, so a page that breaks the policy
(an inline script or handler) shows up as a "Refused"/"violates" console error, and fails the test
like an uncaught script error, a 5xx answer or a page wider than its viewport does.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCREENSHOTS = REPO / "artifacts" / "screenshots"
AXE_JS = REPO / "node_modules" / "axe-core" / "axe.min.js"
CHROMIUM = Path(os.environ.get("DYNABENCH_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
#: (width, height) in CSS pixels: a common laptop and a phone (iPhone 12-15).
VIEWPORTS = {"1366": (1366, 900), "390": (390, 844)}
#: axe impacts that fail a test; "moderate" and "minor" ones are not reported.
FAILING_IMPACTS = ("serious", "critical")
#: How long (ms) an action or an expectation waits before failing.
TIMEOUT_MS = 10_000

# How far the page is wider than the viewport, and the outermost elements that stick out (tag, class,
# right edge in px), or null when it fits.
_SIDEWAYS = """() => {
    const root = document.documentElement;
    const by = root.scrollWidth - root.clientWidth;
    if (by <= 0) return null;
    const out = [];
    for (const el of document.body.querySelectorAll("*")) {
        if (el.getBoundingClientRect().right <= root.clientWidth + 0.5) continue;
        if (out.some(o => o.el.contains(el))) continue;
        out.push({el, right: Math.round(el.getBoundingClientRect().right)});
    }
    const culprits = out.slice(0, 4).map(o =>
        `<${o.el.tagName.toLowerCase()}${o.el.className ? ' class="' + o.el.className + '"' : ""}> to ${o.right}px`);
    return {by, culprits};
}"""
_CSP_ERROR = re.compile(r"Content Security Policy|Refused to (execute|load|apply)", re.IGNORECASE)


def install_hint() -> str:
    """What to run when chromium or axe-core is missing (the message of the failure or skip)."""
    return (
        "the browser tests need Debian's chromium at /usr/bin/chromium (apt-get install -y chromium, or "
        "set DYNABENCH_CHROMIUM) and axe-core in node_modules (npm ci); `make test` installs both"
    )


def missing_requirements() -> list[str]:
    """The browser tests' requirements that are missing on this machine, as short phrases."""
    missing = []
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing.append("the playwright package (pip install -r requirements.txt)")
    if not CHROMIUM.exists():
        missing.append(f"chromium at {CHROMIUM}")
    if not AXE_JS.exists():
        missing.append(f"axe-core at {AXE_JS.relative_to(REPO)}")
    return missing


def slug(text: str) -> str:
    """A file-name-safe form of ``text`` (a test's node name): ``test_x[390]`` -> ``test_x-390``."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")


@dataclass
class Finding:
    """One failing observation on one page: an axe violation, a script error, a CSP refusal, a 5xx or
    a page that scrolls sideways."""

    step: str
    url: str
    kind: str
    text: str

    def __str__(self) -> str:
        return f"[{self.step}] {self.url}\n    {self.kind}: {self.text}"


def axe_violations(page, impacts=FAILING_IMPACTS) -> list[dict]:
    """Run axe-core on ``page`` and return its violations of the given impacts.

    Each violation is ``{"id", "impact", "help", "targets": [css selector, ...], "html": [the start of
    each element's markup, ...]}``. axe-core is
    evaluated into the page through the DevTools protocol, so the page's CSP does not block it and
    is not relaxed for the page's own scripts.
    """
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.evaluate(AXE_JS.read_text(encoding="utf-8"))
    results = page.evaluate(
        """async () => {
            const r = await axe.run(document, {resultTypes: ["violations"]});
            return r.violations.map(v => ({
                id: v.id, impact: v.impact, help: v.help,
                targets: v.nodes.map(n => n.target.join(" ")),
                html: v.nodes.map(n => n.html.slice(0, 120))
            }));
        }"""
    )
    return [v for v in results if v["impact"] in impacts]


@dataclass
class BrowserRun:
    """One test's browser work at one viewport: contexts (one per user), checks and findings.

    ``name`` is the test's file-safe name; ``width``/``height`` the viewport; ``base_url`` the live
    server's. Call ``check(page, step)`` on each page worth a screenshot and an axe audit, and
    ``assert_clean()`` at the end of the test (the fixture calls it too, so findings are never lost).
    """

    browser: object
    base_url: str
    name: str
    width: int
    height: int
    findings: list[Finding] = field(default_factory=list)
    screenshots: list[Path] = field(default_factory=list)
    _contexts: list = field(default_factory=list)

    def page_for(self, user=None, *, javascript: bool = True):
        """A new page in a new browser context at this viewport, logged in as ``user`` (None: anonymous).

        The log-in is a Django session cookie made with ``Client.force_login``: only the sign-up and
        admin tests type a password. With ``javascript=False`` the page runs no script at all (the
        no-JavaScript flows; axe cannot run there).
        """
        from django.conf import settings
        from django.test import Client

        context = self.browser.new_context(
            viewport={"width": self.width, "height": self.height},
            java_script_enabled=javascript,
            base_url=self.base_url,
            locale="en-GB",
        )
        context.set_default_timeout(TIMEOUT_MS)
        self._contexts.append(context)
        if user is not None:
            client = Client()
            client.force_login(user)
            cookie = client.cookies[settings.SESSION_COOKIE_NAME]
            context.add_cookies([{"name": cookie.key, "value": cookie.value, "url": self.base_url}])
        page = context.new_page()
        page.on("pageerror", lambda error: self._note(page, "script error", str(error)))
        page.on("console", lambda message: self._console(page, message))
        page.on("response", lambda response: self._response(page, response))
        return page

    def _note(self, page, kind: str, text: str) -> None:
        self.findings.append(Finding("-", page.url, kind, text))

    def _console(self, page, message) -> None:
        if message.type == "error" and _CSP_ERROR.search(message.text):
            self._note(page, "CSP refusal", message.text)

    def _response(self, page, response) -> None:
        if response.status >= 500:
            request = response.request
            self._note(page, f"server error {response.status}", f"{request.method} {response.url}")

    def check(self, page, step: str, *, axe: bool = True, sideways: bool = True) -> Path:
        """Screenshot ``page`` (full page) as ``<test>-<step>-<width>.png`` and audit it with axe.

        Serious and critical violations become findings (they fail the test at ``assert_clean``), and so
        does a page wider than the viewport (a wide table must scroll in its own box, not the page),
        unless ``sideways=False``; the finding names the widest elements that stick out.
        Returns the screenshot's path.
        """
        page.wait_for_load_state("load")
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{self.name}-{slug(step)}-{self.width}.png"
        try:
            page.screenshot(path=str(path), full_page=True)
        except Exception as exc:  # playwright's Error
            # Chromium's compositor now and then cannot capture a frame under load ("Unable to capture
            # screenshot", seen once in a clean-clone CI run on 2 busy cores): the page is fine, so once more.
            if "Unable to capture screenshot" not in str(exc):
                raise
            page.wait_for_timeout(500)
            page.screenshot(path=str(path), full_page=True)
        self.screenshots.append(path)
        overflow = page.evaluate(_SIDEWAYS) if sideways else None
        if overflow:
            self.findings.append(
                Finding(
                    step,
                    page.url,
                    "page scrolls sideways",
                    f"{overflow['by']}px wider than the {self.width}px viewport; "
                    f"sticking out: {json.dumps(overflow['culprits'], ensure_ascii=False)}",
                )
            )
        if axe:
            for violation in axe_violations(page):
                self.findings.append(
                    Finding(
                        step,
                        page.url,
                        f"axe {violation['id']} ({violation['impact']})",
                        f"{violation['help']}; targets: {json.dumps(violation['targets'][:8])}; "
                        f"elements: {json.dumps(violation['html'][:3], ensure_ascii=False)}",
                    )
                )
        return path

    def assert_clean(self) -> None:
        """Fail, listing every finding (then forgotten, so it is reported once), when any page had one."""
        if self.findings:
            found, self.findings = self.findings, []
            listing = "\n".join(str(f) for f in found)
            raise AssertionError(f"{len(found)} browser finding(s) at {self.width}px:\n{listing}")

    def close(self) -> None:
        for context in self._contexts:
            context.close()
        self._contexts.clear()
