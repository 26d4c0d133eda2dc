/*
 * Span selection for extractive QA (create page). A mouse selection in the passage becomes the answer
 * text and its offset in CODE POINTS, the unit the server stores (core/spans.py). JS strings count
 * UTF-16 units (an emoji outside the BMP is two), so offsets are converted with Array.from, which
 * iterates by code point. The passage is rendered with linebreaksbr: its text is the concatenation of
 * its text nodes, with "\n" for each <br>, exactly the stored (newline-normalised) passage.
 * Typing in the answer box clears the offset: the server then finds the answer (first occurrence).
 * A form that comes with an offset ("Try a variation" of an example on this passage) keeps it, and says
 * so: the answer stays the occurrence the author selected.
 * Without this script the form works the same way, by typing.
 *
 * The helpers are pure functions of DOM-like nodes (nodeType, data, nodeName, childNodes), exported
 * for tests under Node (tests/qa/test_span_select_js.py).
 */
(function () {
  "use strict";
  var TEXT_NODE = 3;

  function lengthOf(node) {
    if (node.nodeType === TEXT_NODE) return node.data.length;
    if (node.nodeName === "BR") return 1;
    var total = 0;
    for (var i = 0; i < node.childNodes.length; i++) total += lengthOf(node.childNodes[i]);
    return total;
  }

  function textOf(node) {
    if (node.nodeType === TEXT_NODE) return node.data;
    if (node.nodeName === "BR") return "\n";
    var parts = [];
    for (var i = 0; i < node.childNodes.length; i++) parts.push(textOf(node.childNodes[i]));
    return parts.join("");
  }

  // UTF-16 offset in `passage` of the DOM boundary point (container, offset), or -1 if outside it.
  function offsetOf(passage, container, offset) {
    var total = 0;
    var result = -1;
    function walk(node) {
      if (result !== -1) return;
      if (node === container) {
        if (node.nodeType === TEXT_NODE) {
          result = total + offset;
        } else {
          for (var i = 0; i < offset && i < node.childNodes.length; i++) total += lengthOf(node.childNodes[i]);
          result = total;
        }
        return;
      }
      if (node.nodeType === TEXT_NODE || node.nodeName === "BR") {
        total += lengthOf(node);
        return;
      }
      for (var j = 0; j < node.childNodes.length && result === -1; j++) walk(node.childNodes[j]);
    }
    walk(passage);
    return result;
  }

  // The answer a selection (start and end boundary points) means: trimmed text and its code-point
  // offset into the passage, or null for an empty or blank selection.
  function spanOf(passage, startContainer, startOffset, endContainer, endOffset) {
    var text = textOf(passage);
    var from = offsetOf(passage, startContainer, startOffset);
    var to = offsetOf(passage, endContainer, endOffset);
    if (from < 0 || to <= from) return null;
    var picked = text.slice(from, to);
    var lead = picked.length - picked.replace(/^\s+/, "").length;
    picked = picked.trim();
    if (!picked) return null;
    return { answer: picked, start: Array.from(text.slice(0, from + lead)).length };
  }

  var helpers = { lengthOf: lengthOf, textOf: textOf, offsetOf: offsetOf, spanOf: spanOf };
  if (typeof module !== "undefined" && module.exports) {
    module.exports = helpers;
    return;
  }

  var hook = document.getElementById("span-select");
  var form = document.querySelector("form.example-form");
  if (!hook || !form) return;
  var answer = form.querySelector("input.span-answer");
  var start = form.querySelector("input.span-answer-start");
  var index = parseInt(hook.getAttribute("data-context-index"), 10);
  var passage = form.querySelectorAll("section.context p")[index];
  var status = document.getElementById("span-status");
  if (!answer || !start || !passage) return;
  passage.classList.add("span-passage");
  passage.setAttribute("title", "Select the answer with the mouse");

  function say(message) {
    if (status) status.textContent = message;
  }

  function onSelect() {
    var selection = window.getSelection();
    if (!selection || selection.rangeCount === 0 || selection.isCollapsed) return;
    var range = selection.getRangeAt(0);
    if (!passage.contains(range.startContainer) || !passage.contains(range.endContainer)) return;
    var span = spanOf(passage, range.startContainer, range.startOffset, range.endContainer, range.endOffset);
    if (!span) return;
    answer.value = span.answer;
    start.value = String(span.start);
    say("Answer selected in the passage (character " + span.start + ").");
  }

  if (answer.value.trim() && /^[0-9]+$/.test(start.value)) {
    say("Answer selected in the passage (character " + start.value + ").");
  }

  passage.addEventListener("mouseup", onSelect);
  passage.addEventListener("keyup", onSelect);
  passage.addEventListener("touchend", onSelect);
  answer.addEventListener("input", function () {
    start.value = "";
    say(answer.value.trim() ? "Typed answer: the server will look for it in the passage." : "");
  });
})();
