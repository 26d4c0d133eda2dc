"""The red-teaming page's script (annotation/static/annotation/red_team.js), run under Node on a small
stand-in of the page (the message form, the turns, the judge form) with ``fetch`` answering server-sent
events as ``annotation/red_team/sse.py`` writes them: a whole answer, or a connection that breaks
partway. The page in a real browser is tested in tests/browser/test_browser_red_team.py."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "annotation" / "static" / "annotation" / "red_team.js"

# A stand-in DOM: elements with children, a dataset, a classList, and querySelector for the selectors
# the script uses (tag, .class, #id, [attr] and [attr=value], and descendants). The script is loaded
# with it, so it finds the form and listens to its submit; each send of argv[2] then submits the form
# with the box holding argv[3] and awaits what the listener returned. ``fetch`` answers each send with
# the events of its scenario: "whole" (turn, two tokens, done), "broken" (turn, a token, then the
# connection fails), "broken-typed" (the same, with another message typed in the box meanwhile) or "busy"
# (a 503 refusal: the model's line is full) or "resent-cut" (turn, a token, then done with the stored
# turn, cut short when the page broke off earlier).
# Prints the page's state after the sends.
RUNNER = r"""
const path = process.argv[1];
const sends = JSON.parse(process.argv[2]);
const prompt = process.argv[3];

class El {
  constructor(tag, props = {}) {
    this.tagName = tag.toUpperCase();
    this.children = [];
    this.parent = null;
    this.dataset = {};
    this.className = "";
    this.id = "";
    this.hidden = false;
    this.textContent = "";
    this.value = "";
    this.disabled = false;
    this.attrs = {};
    const self = this;
    this.classList = {
      add(c) { if (!self.classList.contains(c)) self.className = (self.className + " " + c).trim(); },
      remove(c) { self.className = self.className.split(/\s+/).filter((x) => x !== c).join(" "); },
      contains(c) { return self.className.split(/\s+/).includes(c); },
    };
    Object.assign(this, props);
  }
  get value() { return this._value; }
  set value(v) { this._value = String(v); } // as an input's value: always text
  append(...nodes) { for (const n of nodes) { n.parent = this; this.children.push(n); } }
  prepend(n) { n.parent = this; this.children.unshift(n); }
  after(n) { const s = this.parent.children; n.parent = this.parent; s.splice(s.indexOf(this) + 1, 0, n); }
  remove() { if (this.parent) this.parent.children.splice(this.parent.children.indexOf(this), 1); this.parent = null; }
  focus() {}
  attr(name) {
    if (name.startsWith("data-")) return this.dataset[name.slice(5).replace(/-(\w)/g, (m, c) => c.toUpperCase())];
    if (name in this.attrs) return this.attrs[name];
    return this[name];
  }
  matches(compound) {
    const m = compound.match(/^([a-z]+)?((?:[.#][\w-]+)*)((?:\[[^\]]+\])*)$/);
    if (!m) throw new Error("selector not understood: " + compound);
    if (m[1] && this.tagName !== m[1].toUpperCase()) return false;
    for (const part of m[2].match(/[.#][\w-]+/g) || []) {
      if (part[0] === "." && !this.classList.contains(part.slice(1))) return false;
      if (part[0] === "#" && this.id !== part.slice(1)) return false;
    }
    for (const a of m[3].match(/\[[^\]]+\]/g) || []) {
      const [, name, value] = a.match(/^\[([\w-]+)(?:="?([^"]*)"?)?\]$/);
      const own = this.attr(name);
      if (value === undefined ? own === undefined : String(own) !== value) return false;
    }
    return true;
  }
  descendants() { return this.children.flatMap((c) => [c, ...c.descendants()]); }
  querySelectorAll(selector) {
    const parts = selector.trim().split(/\s+/);
    let found = [this];
    for (const part of parts) {
      found = [...new Set(found.flatMap((el) => el.descendants().filter((d) => d.matches(part))))];
    }
    return found;
  }
  querySelector(selector) { return this.querySelectorAll(selector)[0] || null; }
}

const body = new El("body");
const turns = new El("ol", { id: "turns", className: "turns" });
turns.append(new El("li", { className: "muted empty-turns" }));
const submitted = [];
const listeners = [];
const form = new El("form", { id: "send-form", action: "/tasks/red-team/red-team/send/" });
form.dataset = { maxTurns: "3", turns: "0" };
form.submit = () => submitted.push("plain post");
form.addEventListener = (type, fn) => { if (type === "submit") listeners.push(fn); };
const label = new El("label", { attrs: { for: "id_prompt" } });
label.append(new El("span", { className: "muted", textContent: "(1 of 3)" }));
const box = new El("textarea", { name: "prompt" });
const button = new El("button", { type: "submit" });
const status = new El("p", { className: "stream-status muted" });
form.append(
  new El("input", { type: "hidden", name: "client_token", value: "11111111-1111-4111-8111-111111111111" }),
  new El("input", { type: "hidden", name: "context", value: "7" }),
  label, box, button, status
);
const rubric = new El("section", { id: "rubric", hidden: true });
const judge = new El("form", { id: "judge-form" });
const judgeButton = new El("button", { attrs: { type: "submit" } });
judge.append(new El("input", { type: "hidden", name: "answered_turns", value: "0" }), judgeButton);
const midstream = []; // the page as each piece of an answer is read
rubric.append(judge);
body.append(turns, form, rubric, new El("p", { className: "skip-context" }));

global.window = globalThis;
global.document = {
  getElementById: (id) => body.descendants().find((el) => el.id === id) || null,
  querySelector: (selector) => body.querySelector(selector),
  createElement: (tag) => new El(tag),
};
global.FormData = class { constructor(f) { this.form = f; } };

const encoder = new TextEncoder();
const event = (name, data) => encoder.encode("event: " + name + "\ndata: " + JSON.stringify(data) + "\n\n");
const stored = { index: 0, prompt, answer: "The Amazon is 6,400 km long.", status: "answered",
                 finish_reason: "stop", error: "", generation: {} };
let sent = 0;
global.fetch = async () => {
  const scenario = sends[sent++];
  if (scenario === "busy") { // a full line for the model: 503, plain text, as models_registry/queue_full.py
    return new Response("The model is busy: 3 requests are waiting. Try again in 4 s.", {
      status: 503, headers: { "Content-Type": "text/plain; charset=utf-8", "Retry-After": "4" },
    });
  }
  const chunks = [
    event("turn", { turn: 0, conversation: 5 }),
    event("token", { text: "The Amazon" }),
    ...(scenario === "whole" ? [event("token", { text: " is 6,400 km long." }), event("done", stored)] : []),
    // The stored turn of a message sent again after the page broke off: what came before, cut short.
    ...(scenario === "resent-cut" ? [event("done", { ...stored, answer: "The Amazon", finish_reason: "cut_short" })] : []),
  ];
  const stream = new ReadableStream({
    pull(controller) {
      midstream.push({ label: label.children[0].textContent, judgeDisabled: judgeButton.disabled, boxDisabled: box.disabled });
      if (chunks.length) controller.enqueue(chunks.shift());
      else if (scenario === "whole" || scenario === "resent-cut") controller.close();
      else {
        if (scenario === "broken-typed") box.value = "And how wide is it?"; // typed while it answered
        controller.error(new TypeError("network error"));
      }
    },
  });
  return new Response(stream, { status: 200, headers: { "Content-Type": "text/event-stream; charset=utf-8" } });
};

require(path);

(async () => {
  const errors = [];
  for (const _ of sends) {
    if (!box.value) box.value = prompt;
    try {
      await listeners[0]({ preventDefault() {} });
    } catch (e) {
      errors.push(String(e));
    }
  }
  console.log(JSON.stringify({
    errors,
    submitted,
    disabled: button.disabled,
    box: box.value,
    status: status.textContent,
    statusWarning: status.classList.contains("warning"),
    clientToken: form.querySelector('input[name="client_token"]').value,
    conversation: (form.querySelector('input[name="conversation"]') || {}).value || null,
    answeredTurns: judge.querySelector('input[name="answered_turns"]').value,
    rubricHidden: rubric.hidden,
    label: label.children[0].textContent,
    judgeDisabled: judgeButton.disabled,
    midstream,
    turns: turns.querySelectorAll("li.turn").map((li) => ({
      id: li.id,
      status: li.dataset.status || null,
      answer: li.querySelector("p.answer").textContent,
      warnings: li.querySelectorAll(".warning").map((w) => w.textContent),
    })),
  }));
})();
"""

PROMPT = "How long is the Amazon? 🌊"


def _run(sends: list[str]) -> dict:
    node = shutil.which("node")
    if node is None:
        pytest.fail(
            "node is not on PATH: install Node.js (apt-get install nodejs) to run this test", pytrace=False
        )
    result = subprocess.run(
        [node, "-e", RUNNER, str(SCRIPT), json.dumps(sends), PROMPT],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return json.loads(result.stdout)


def test_a_whole_answer_is_shown_and_the_judge_form_counts_it():
    page = _run(["whole"])
    assert page["errors"] == [] and page["submitted"] == []
    assert page["turns"] == [
        {"id": "turn-0", "status": "answered", "answer": "The Amazon is 6,400 km long.", "warnings": []}
    ]
    assert (page["disabled"], page["box"], page["status"], page["rubricHidden"]) == (False, "", "", False)
    assert page["conversation"] == "5"
    # The judge form says how many answered turns the page shows: the server refuses a judgement of more.
    assert page["answeredTurns"] == "1"
    # While the answer came, the box was for message 2, and the judgement could not be sent (the server
    # refuses one while an answer is written); afterwards it can.
    assert {json.dumps(seen) for seen in page["midstream"][1:]} == {
        json.dumps({"label": "(2 of 3)", "judgeDisabled": True, "boxDisabled": False})
    }
    assert (page["label"], page["judgeDisabled"]) == ("(2 of 3)", False)


def test_while_the_last_message_is_answered_the_label_says_so():
    page = _run(["whole", "whole", "whole"])
    # ... and its box takes no draft: the form goes when the answer has come.
    assert page["midstream"][-1] == {
        "label": "(this is the last message)",
        "judgeDisabled": True,
        "boxDisabled": True,
    }
    assert page["judgeDisabled"] is False and page["errors"] == []


TOKEN = "11111111-1111-4111-8111-111111111111"  # the form's client token as the page served it


def test_a_connection_broken_mid_answer_gives_the_form_back_and_says_so():
    page = _run(["broken"])
    # The script neither hangs nor fails: the button works again, the message is back in the box.
    assert page["errors"] == [] and page["submitted"] == []
    assert (page["disabled"], page["box"], page["statusWarning"]) == (False, PROMPT, True)
    assert page["status"] == (
        "The connection to the server broke (network error) before the answer was complete. Your message "
        "is back in the box: send it again to get what was stored (it is not stored twice), or reload "
        "the page."
    )
    # The same client token: sent again, the server answers with the turn it stored, not a second one.
    assert (page["clientToken"], page["conversation"]) == (TOKEN, "5")
    assert page["turns"] == [
        {
            "id": "turn-0",
            "status": "broken",
            "answer": "The Amazon",
            "warnings": ["The connection broke before this answer was complete; what came is shown."],
        }
    ]
    assert (page["answeredTurns"], page["rubricHidden"]) == ("0", True)
    assert (page["label"], page["judgeDisabled"]) == ("(1 of 3)", False)  # the message may go again


def test_the_message_sent_again_after_a_break_replaces_the_broken_turn():
    page = _run(["broken", "whole"])
    assert page["errors"] == []
    assert page["turns"] == [
        {"id": "turn-0", "status": "answered", "answer": "The Amazon is 6,400 km long.", "warnings": []}
    ]
    assert (page["disabled"], page["box"], page["status"], page["answeredTurns"]) == (False, "", "", "1")


def test_a_message_typed_meanwhile_stays_in_the_box_as_a_new_message():
    page = _run(["broken-typed"])
    assert page["errors"] == []
    assert (page["disabled"], page["box"], page["statusWarning"]) == (False, "And how wide is it?", True)
    assert page["status"] == (
        "The connection to the server broke (network error) before the answer was complete. Reload the "
        "page to see what was stored."
    )
    assert page["clientToken"] != TOKEN  # what the box holds is a new turn


def test_a_full_line_is_said_in_place_and_the_message_stays():
    """A 503 (the model's line is full) is shown under the box like a 4xx refusal, with the message kept
    and the button enabled; the form is not sent again the plain way (``submitted`` stays empty)."""
    page = _run(["busy"])
    assert page["errors"] == []
    assert page["submitted"] == []
    assert page["disabled"] is False
    assert page["box"] == PROMPT
    assert page["status"] == "The model is busy: 3 requests are waiting. Try again in 4 s."
    assert page["statusWarning"] is True
    assert page["turns"] == []


def test_a_stored_answer_cut_short_is_said_so_when_it_comes_back():
    """A message sent again after a break gets its stored turn back, cut short when the page left: the
    page says so at once, as it does after a reload."""
    page = _run(["broken", "resent-cut"])
    assert page["errors"] == [] and page["submitted"] == []
    [turn] = page["turns"]
    assert turn["answer"] == "The Amazon"
    assert turn["warnings"] == [
        "The answer was cut short: the page was left before it finished. What came is kept."
    ]
