/*
 * Validate page: keyboard shortcuts and the corrected label (validation/templates/validation/validate.html).
 * Keys 1, 2 and 3 press the Correct, Incorrect and Flag buttons (those with data-key) unless the
 * focus is in a text box or a modifier key is held (in the label list too, so that after the first
 * Incorrect, which focuses the list, 2 records it). The corrected-label list is hidden until
 * Incorrect is chosen: the first press of Incorrect shows it instead of submitting, a second press
 * records the verdict (with or without a label). Without this script every button submits at once
 * and the list stays visible.
 */
(function () {
  "use strict";
  var form = document.querySelector("form.verdict");
  if (!form) return;
  var label = form.querySelector(".corrected-label");
  var select = label ? label.querySelector("select") : null;
  var incorrect = form.querySelector('button[value="incorrect"]');

  if (label && select && !select.value) {
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

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || event.isComposing) return;
    var target = event.target;
    var tag = target && target.tagName;
    if (tag === "INPUT" || tag === "TEXTAREA" || (target && target.isContentEditable)) return;
    var button = form.querySelector('button[data-key="' + event.key + '"]');
    if (!button) return;
    event.preventDefault();
    button.click();
  });
})();
