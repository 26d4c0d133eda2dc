/*
 * Uncertainty mode's live goal (create page): how sure the round's target models are of the draft, asked
 * of the server (annotation.views.confidence) when the writer pauses typing for PAUSE_MS, or presses
 * "Check the model now". Nothing is stored; the server decides again when the example is submitted.
 * Text is set with textContent only: a model's answer is the writer's own text, never markup.
 * An answer that comes back after a newer question was sent is dropped (sequence numbers).
 */
(function () {
  "use strict";
  var PAUSE_MS = 800;
  var goal = document.getElementById("confidence-goal");
  var form = document.querySelector("form.example-form");
  var live = document.getElementById("confidence-live");
  if (!goal || !form || !live) return;
  var url = goal.getAttribute("data-url");
  var timer = null;
  var asked = 0;

  function hasText() {
    var boxes = form.querySelectorAll("textarea, input[type=text]");
    for (var i = 0; i < boxes.length; i++) if (boxes[i].value.trim()) return true;
    return false;
  }

  function say(parts) {
    live.textContent = "";
    parts.forEach(function (part) {
      var span = document.createElement(part.strong ? "strong" : "span");
      if (part.cls) span.className = part.cls;
      span.textContent = part.text;
      live.appendChild(span);
    });
  }

  function show(answer) {
    var parts = [];
    var name = answer.goal.measure_name;
    answer.models.forEach(function (row, i) {
      var who = answer.models.length > 1 ? row.model + ": " : "The model's ";
      if (row.value === null) {
        parts.push({ text: who + (row.error || "no answer") + ". " });
        return;
      }
      parts.push({ text: who + name + " " + row.value.toFixed(2) + " (answer: " + row.answer + ") " });
      parts.push({ text: row.unsure ? "unsure" : "sure", strong: true, cls: row.unsure ? "unsure" : "sure" });
      parts.push({ text: i < answer.models.length - 1 ? "; " : ". " });
    });
    if (answer.unsure === true) parts.push({ text: "As it stands, this example meets the goal.", strong: true });
    else if (answer.unsure === false) parts.push({ text: "Not yet: the goal is " + answer.goal.rule + "." });
    say(parts);
  }

  function check() {
    if (!hasText()) {
      say([{ text: "Write something first: the model is asked about your text.", cls: "muted" }]);
      return;
    }
    var mine = ++asked;
    var body = new FormData(form);
    var token = form.querySelector('input[name="csrfmiddlewaretoken"]');
    say([{ text: "Asking the model…", cls: "muted" }]);
    fetch(url, {
      method: "POST",
      body: body,
      credentials: "same-origin",
      headers: { "X-Requested-With": "fetch", "X-CSRFToken": token ? token.value : "" },
    })
      .then(function (response) {
        return response.json().then(function (data) {
          return { ok: response.ok, data: data };
        });
      })
      .then(function (result) {
        if (mine !== asked) return;
        if (result.ok) show(result.data);
        else say([{ text: (result.data.errors || ["The model could not be asked."]).join(" "), cls: "muted" }]);
      })
      .catch(function () {
        if (mine === asked) say([{ text: "The model could not be asked; you can still submit.", cls: "muted" }]);
      });
  }

  form.addEventListener("input", function (event) {
    if (!event.target.matches("textarea, input[type=text]")) return;
    clearTimeout(timer);
    timer = setTimeout(check, PAUSE_MS);
  });
  var button = goal.querySelector("[data-check-confidence]");
  if (button) button.addEventListener("click", check);
})();
