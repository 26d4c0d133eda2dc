/*
 * Validate page: keyboard shortcuts, the corrected label and the undo offer
 * (validation/templates/validation/validate.html, empty.html, _undo.html).
 * Keys 1, 2 and 3 press the Correct, Incorrect and Flag buttons, and u the Undo button (the buttons
 * with data-key), unless the focus is in a text box or a modifier key is held. In the label list only
 * 2 acts: after the first Incorrect, which focuses the list, 2 records it; 1 or 3 there, a validator
 * reaching for an option, do nothing. The corrected-label list
 * is hidden until Incorrect is chosen: the first press of Incorrect shows it instead of submitting, a
 * second press records the verdict (with or without a label). The undo offer counts down and goes
 * when its window (data-undo-seconds) is over. Without this script every button submits at once, the
 * list stays visible and the undo button stays (the server refuses it once the window is over).
 */
(function () {
  "use strict";
  var form = document.querySelector("form.verdict");
  var label = form ? form.querySelector(".corrected-label") : null;
  var select = label ? label.querySelector("select") : null;
  var incorrect = form ? form.querySelector('button[value="incorrect"]') : null;

  if (label && select && incorrect && !select.value) {
    label.hidden = true;
    var note = document.createElement("span");
    note.className = "muted";
    note.textContent = " Press Incorrect again to record the verdict.";
    label.appendChild(note);
    incorrect.addEventListener("click", function (event) {
      if (label.hidden) {
        event.preventDefault();
        label.hidden = false;
        select.focus();
      }
    });
  }

  var undo = document.querySelector("form.undo[data-undo-seconds]");
  if (undo) {
    var left = parseInt(undo.getAttribute("data-undo-seconds"), 10) || 0;
    var shown = undo.querySelector(".undo-left");
    var tick = function () {
      left -= 1;
      if (left <= 0) {
        undo.hidden = true;
        return;
      }
      if (shown) shown.textContent = "You can undo it for " + left + " more second" + (left === 1 ? "" : "s") + ".";
      window.setTimeout(tick, 1000);
    };
    window.setTimeout(tick, 1000);
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || event.isComposing) return;
    var target = event.target;
    var tag = target && target.tagName;
    if (tag === "INPUT" || tag === "TEXTAREA" || (target && target.isContentEditable)) return;
    if (!event.key || event.key.length !== 1) return;
    var key = event.key.toLowerCase();
    // In the corrected-label list only 2 acts (it records the Incorrect verdict): a 1 or a 3 typed there
    // is a validator reaching for an option, not for the opposite verdict.
    if (tag === "SELECT" && key !== "2") return;
    var button = document.querySelector('button[data-key="' + key + '"]');
    if (!button || button.closest("[hidden]")) return;
    event.preventDefault();
    button.click();
  });
})();
