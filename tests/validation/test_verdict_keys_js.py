"""The validate page's verdict script (validation/static/validation/verdict_keys.js), run under Node on a
minimal stand-in of the page's form: keys 1/2/3 press the verdict buttons, the corrected-label list is
hidden until Incorrect is chosen. The undo offer is tested in a real browser (tests/validation/test_undo_verdict.py
covers the server side)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "validation" / "static" / "validation" / "verdict_keys.js"

# The fake page: buttons that record a submit unless a click listener prevents it; the script is
# loaded with ``document`` global, then the events of argv[3] are sent: ["key", key, target, ctrl]
# or ["click", verdict]. Prints what happened after each event.
RUNNER = """
const path = process.argv[1];
const preset = process.argv[2];
const events = JSON.parse(process.argv[3]);
const submitted = [];
let keydown = null;
let focused = null;
function button(value, key) {
  const listeners = [];
  return {
    value, key,
    closest: () => null,
    addEventListener(type, fn) { if (type === "click") listeners.push(fn); },
    click() {
      let prevented = false;
      const ev = {preventDefault() { prevented = true; }};
      listeners.forEach((fn) => fn(ev));
      if (!prevented) submitted.push(value);
    },
  };
}
const buttons = [button("correct", "1"), button("incorrect", "2"), button("flagged", "3")];
const select = {value: preset, focus() { focused = "select"; }};
const label = {hidden: false, children: [], querySelector: () => select,
               appendChild(n) { this.children.push(n.textContent); }};
const form = {
  querySelector(sel) {
    if (sel === ".corrected-label") return label;
    let m = sel.match(/^button\\[value="(.*)"\\]$/);
    if (m) return buttons.find((b) => b.value === m[1]) || null;
    m = sel.match(/^button\\[data-key="(.*)"\\]$/);
    if (m) return buttons.find((b) => b.key === m[1]) || null;
    return null;
  },
};
global.document = {
  querySelector: (sel) => (sel === "form.verdict" ? form : sel.startsWith("button") ? form.querySelector(sel) : null),
  createElement: () => ({}),
  addEventListener(type, fn) { if (type === "keydown") keydown = fn; },
};
require(path);
const log = [{hidden: label.hidden, note: label.children}];
for (const ev of events) {
  if (ev[0] === "key") {
    keydown({key: ev[1], target: {tagName: ev[2]}, ctrlKey: !!ev[3], preventDefault() {}});
  } else {
    buttons.find((b) => b.value === ev[1]).click();
  }
  log.push({hidden: label.hidden, submitted: submitted.slice(), focused});
}
console.log(JSON.stringify(log));
"""


def _run(events, preset=""):
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not on PATH: install Node.js to run this test", pytrace=False)
    result = subprocess.run(
        [node, "-e", RUNNER, str(SCRIPT), preset, json.dumps(events)],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return json.loads(result.stdout)


def test_keys_press_the_buttons_and_incorrect_first_shows_the_label():
    log = _run(
        [
            ["key", "2", "BODY"],  # shows the list, submits nothing
            ["key", "2", "SELECT"],  # in the list it focused: now records "incorrect"
            ["key", "1", "TEXTAREA"],  # typing a reason: ignored
            ["key", "3", "BODY", True],  # Ctrl+3: ignored
            ["key", "x", "BODY"],  # not a shortcut
            ["key", "3", "BODY"],
            ["key", "1", "BODY"],
        ]
    )
    assert log[0] == {"hidden": True, "note": [" Press Incorrect again to record the verdict."]}
    assert log[1:] == [
        {"hidden": False, "submitted": [], "focused": "select"},
        {"hidden": False, "submitted": ["incorrect"], "focused": "select"},
        {"hidden": False, "submitted": ["incorrect"], "focused": "select"},
        {"hidden": False, "submitted": ["incorrect"], "focused": "select"},
        {"hidden": False, "submitted": ["incorrect"], "focused": "select"},
        {"hidden": False, "submitted": ["incorrect", "flagged"], "focused": "select"},
        {"hidden": False, "submitted": ["incorrect", "flagged", "correct"], "focused": "select"},
    ]


def test_correct_and_flag_submit_at_once_and_the_label_stays_hidden():
    log = _run([["click", "correct"], ["key", "3", "BODY"]])
    assert log[1:] == [
        {"hidden": True, "submitted": ["correct"], "focused": None},
        {"hidden": True, "submitted": ["correct", "flagged"], "focused": None},
    ]


def test_a_label_already_chosen_stays_visible_and_incorrect_submits_at_once():
    log = _run([["click", "incorrect"]], preset="not-hateful")
    assert log == [
        {"hidden": False, "note": []},
        {"hidden": False, "submitted": ["incorrect"], "focused": None},
    ]


def test_in_the_label_list_only_2_acts():
    """A validator who opened the list with 2 and types 1 or 3 there reaches for an option, not for the
    opposite verdict (a fresh-user test recorded "correct" that way)."""
    log = _run([["key", "2", "BODY"], ["key", "1", "SELECT"], ["key", "3", "SELECT"], ["key", "2", "SELECT"]])
    assert [entry["submitted"] for entry in log[1:]] == [[], [], [], ["incorrect"]]
