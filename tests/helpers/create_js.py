"""The create page's script (annotation/static/annotation/create.js) run under Node on cases given as
JSON: what a fetch answer means (``answerKind``), the character counter's count and text
(``codePoints``, ``counterText``) and a cookie's value (``cookieValue``), the pure helpers the script
exports under Node."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "annotation" / "static" / "annotation" / "create.js"
LOGIN = "/accounts/login/"

RUNNER = """
const h = require(process.argv[1]);
const cases = JSON.parse(process.argv[2]);
console.log(JSON.stringify({
  kinds: cases.answers.map(r => h.answerKind(r, cases.login)),
  counts: cases.texts.map(t => [h.codePoints(t[0]), h.counterText(t[0], t[1])]),
  cookies: cases.cookies.map(c => h.cookieValue(c[0], c[1])),
}));
"""


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not on PATH: install Node.js (apt-get install nodejs)", pytrace=False)
    return node


def run_create_js(answers=(), texts=(), cookies=()):
    """``{"kinds": [...], "counts": [[code points, counter text], ...], "cookies": [...]}`` for the
    answers (status, redirected, url), the texts ([text, limit]) and the cookies ([header, name])."""
    cases = {"login": LOGIN, "answers": list(answers), "texts": list(texts), "cookies": list(cookies)}
    result = subprocess.run(
        [_node(), "-e", RUNNER, str(SCRIPT), json.dumps(cases)],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return json.loads(result.stdout)
