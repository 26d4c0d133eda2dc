// The task config box in the admin: says as you type whether the text is valid JSON (syntax only; the
// schema is checked on save, with one message per problem). Without this script the form works the same.
(function () {
  "use strict";

  function lineAndColumn(text, position) {
    var before = text.slice(0, position).split("\n");
    return "line " + before.length + ", column " + (before[before.length - 1].length + 1);
  }

  function check(box, status) {
    var text = box.value;
    if (!text.trim()) {
      status.textContent = "";
      return;
    }
    try {
      JSON.parse(text);
      status.textContent = "JSON syntax OK (the schema is checked when you save).";
      status.className = "help json-editor-status json-editor-ok";
      box.removeAttribute("aria-invalid");
    } catch (error) {
      var message = String(error.message || error);
      var match = /position (\d+)/.exec(message);
      var where = match && !/line \d/.test(message) ? " (" + lineAndColumn(text, Number(match[1])) + ")" : "";
      status.textContent = "Not valid JSON: " + message + where;
      status.className = "help json-editor-status json-editor-error";
      box.setAttribute("aria-invalid", "true");
    }
  }

  function attach(box) {
    var status = document.createElement("div");
    status.className = "help json-editor-status";
    status.id = box.id + "-syntax";
    status.setAttribute("aria-live", "polite");
    // Below the box (after the admin's field row), not beside it.
    (box.closest(".flex-container") || box).insertAdjacentElement("afterend", status);
    var described = box.getAttribute("aria-describedby");
    box.setAttribute("aria-describedby", (described ? described + " " : "") + status.id);
    var timer = null;
    box.addEventListener("input", function () {
      window.clearTimeout(timer);
      timer = window.setTimeout(function () { check(box, status); }, 250);
    });
    check(box, status);
  }

  function start() {
    Array.prototype.forEach.call(document.querySelectorAll("textarea.json-editor"), attach);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
