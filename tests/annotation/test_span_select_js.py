"""The create page's selection script, run under Node on DOM-like nodes: UTF-16 selection offsets become
the code-point offsets the server checks (``core.spans.resolve_answer``)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from core.spans import resolve_answer, utf16_from_code_points

SCRIPT = Path(__file__).resolve().parents[2] / "annotation" / "static" / "annotation" / "span_select.js"

# The passage as linebreaksbr renders it: text nodes with <br> between lines.
LINES = ["🎉 The party 👨‍👩‍👧 met", "at the cafe\u0301 in מרכז העיר,", "then قال الرئيس إن المدينة جميلة."]
PASSAGE = "\n".join(LINES)

RUNNER = """
const h = require(process.argv[1]);
const lines = JSON.parse(process.argv[2]);
const cases = JSON.parse(process.argv[3]);
const p = {nodeType: 1, nodeName: "P", childNodes: []};
lines.forEach((line, i) => {
  if (i) p.childNodes.push({nodeType: 1, nodeName: "BR", childNodes: []});
  p.childNodes.push({nodeType: 3, data: line});
});
// a DOM boundary point from a UTF-16 offset into the whole passage, as a browser would give it
function point(u16) {
  let rest = u16;
  for (const node of p.childNodes) {
    const len = h.lengthOf(node);
    if (node.nodeType === 3 && rest <= len) return [node, rest];
    rest -= len;
  }
  return [p, p.childNodes.length];
}
const out = {text: h.textOf(p), spans: cases.map(([a, b]) => {
  const [sc, so] = point(a), [ec, eo] = point(b);
  return h.spanOf(p, sc, so, ec, eo);
})};
console.log(JSON.stringify(out));
"""


def _node() -> str:
    """The node executable; the test fails when there is none (.ci/run installs nodejs where missing)."""
    node = shutil.which("node")
    if node is None:
        pytest.fail(
            "node is not on PATH: install Node.js (apt-get install nodejs) to run this test", pytrace=False
        )
    return node


def _run(cases):
    result = subprocess.run(
        [_node(), "-e", RUNNER, str(SCRIPT), json.dumps(LINES), json.dumps(cases)],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return json.loads(result.stdout)


@pytest.mark.parametrize("answer", ["מרכז העיר", "cafe\u0301", "👨‍👩‍👧", "المدينة", "party 👨‍👩‍👧 met\nat"])
def test_selection_gives_the_code_point_offset_the_server_accepts(answer):
    start = PASSAGE.index(answer)
    u16 = [utf16_from_code_points(PASSAGE, start), utf16_from_code_points(PASSAGE, start + len(answer))]
    out = _run([u16])
    assert out["text"] == PASSAGE  # <br> read back as the stored newline
    [span] = out["spans"]
    assert span == {"answer": answer, "start": start}
    assert resolve_answer(PASSAGE, span["answer"], span["start"]).start == start


def test_surrounding_spaces_are_trimmed_and_blank_selections_ignored():
    start = PASSAGE.index(" met")
    u16 = utf16_from_code_points(PASSAGE, start)
    out = _run([[u16, u16 + 5], [u16, u16 + 1], [u16, u16]])
    assert out["spans"][0] == {"answer": "met", "start": start + 1}
    assert out["spans"][1] is None and out["spans"][2] is None
