/*
 * The annotation assistant on the create page (annotation.views.suggest): "Suggest an example" asks the
 * writer's arm's assistant for a candidate on the page's context (for the label chosen, if any); "Use
 * this suggestion" puts it in the first text box, where the writer may edit it, and marks the form with
 * the suggestion's id, so the server records what was proposed and how much of it was kept. Once an
 * example is saved (create.js's "dynabench:work-sent"), the id is cleared: a suggestion goes with one
 * example. The section stays hidden without this script (the page works the same without it).
 * Text is set with textContent only: a suggestion is a model's output, never markup.
 */
(function () {
  "use strict";
  var section = document.getElementById("assistant");
  var form = document.querySelector("form.example-form");
  if (!section || !form) return;
  section.hidden = false;
  var url = section.getAttribute("data-url");
  var ask = section.querySelector("[data-suggest]");
  var take = section.querySelector("[data-take]");
  var text = section.querySelector(".suggestion-text");
  var status = section.querySelector(".suggestion-status");
  var hidden = form.querySelector('input[name="suggestion"]');
  var box = form.querySelector("textarea");
  var current = null;

  function say(message) {
    status.textContent = message;
  }

  ask.addEventListener("click", function () {
    var token = form.querySelector('input[name="csrfmiddlewaretoken"]');
    ask.disabled = true;
    take.hidden = true;
    say("The assistant is writing…");
    fetch(url, {
      method: "POST",
      body: new FormData(form),
      credentials: "same-origin",
      headers: { "X-Requested-With": "fetch", "X-CSRFToken": token ? token.value : "" },
    })
      .then(function (response) {
        return response.json().then(function (data) {
          return { ok: response.ok, data: data };
        });
      })
      .then(function (result) {
        if (!result.ok) {
          current = null;
          text.hidden = true; // an earlier proposal no longer goes with the button that is gone
          say((result.data.errors || ["The assistant could not answer."]).join(" "));
          return;
        }
        current = result.data;
        text.textContent = current.text;
        text.hidden = false;
        take.hidden = false;
        say("Proposed in " + current.seconds.toFixed(1) + " s.");
      })
      .catch(function () {
        say("The assistant could not be reached; write your own example.");
      })
      .then(function () {
        ask.disabled = false;
      });
  });

  take.addEventListener("click", function () {
    if (!current || !box) return;
    box.value = current.text;
    box.dispatchEvent(new Event("input", { bubbles: true }));
    if (hidden) hidden.value = String(current.id);
    say("Taken: edit it as you like before you submit.");
    box.focus();
  });

  document.addEventListener("dynabench:work-sent", function (event) {
    if (event.detail && event.detail.saved && hidden) {
      hidden.value = "";
      current = null;
      take.hidden = true;
      text.hidden = true;
      say("");
    }
  });
})();
