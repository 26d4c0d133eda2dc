/*
 * The create page's in-page verdict (progressive enhancement; annotation/views.py, create).
 *
 * Intercepts the example form's submit and POSTs the same form data with fetch and the header
 * "X-Requested-With: fetch". The server answers with an HTML fragment: the verdict (200,
 * _create_result.html) or the messages of a refused example (422, _create_errors.html). The fragment goes
 * into the live region #verdict (aria-live="polite"); the text stays in the box for "try a variation".
 * The fragment carries the form token to send next (data-client-token, data-started): after a success it
 * is a fresh one, so the same text sent again is a new example, while a double click (the button is
 * disabled while sending) never sends twice. A network failure, a redirect (the session expired) or any
 * other status falls back to the plain form POST, which works without this script too.
 */
(function () {
  "use strict";
  var form = document.querySelector("form.example-form");
  var region = document.getElementById("verdict");
  if (!form || !region || !window.fetch || !window.FormData || !window.DOMParser) return;
  var submit = form.querySelector("button[type=submit]");
  var clear = form.querySelector("button[data-clear]");
  var tally = document.getElementById("session-tally");
  var sending = false;

  function setHidden(name, value) {
    var input = form.querySelector('input[type="hidden"][name="' + name + '"]');
    if (input && value) input.value = value;
  }

  function done() {
    sending = false;
    if (submit) submit.disabled = false;
    form.removeAttribute("aria-busy");
  }

  function plainSubmit() {
    done();
    HTMLFormElement.prototype.submit.call(form); // fires no submit event: not intercepted again
  }

  function show(root) {
    region.replaceChildren.apply(region, Array.prototype.slice.call(root.childNodes));
  }

  function onAnswer(status, text) {
    var doc = new DOMParser().parseFromString(text, "text/html");
    var root = doc.querySelector(status === 200 ? ".create-result" : ".create-errors");
    if (!root || root.hasAttribute("data-reload")) {
      plainSubmit();
      return;
    }
    setHidden("client_token", root.getAttribute("data-client-token"));
    setHidden("started", root.getAttribute("data-started"));
    setHidden("round", root.getAttribute("data-round"));
    if (tally && root.getAttribute("data-tally")) tally.textContent = root.getAttribute("data-tally");
    show(root);
    if (status === 200 && clear) clear.hidden = false;
    done();
    region.scrollIntoView({ block: "nearest" });
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    if (sending) return;
    sending = true;
    if (submit) submit.disabled = true;
    form.setAttribute("aria-busy", "true");
    var waiting = document.createElement("p");
    waiting.className = "muted";
    waiting.textContent = "Asking the model\u2026";
    region.replaceChildren(waiting);
    fetch(form.action, {
      method: "POST",
      body: new FormData(form),
      headers: { "X-Requested-With": "fetch" },
      credentials: "same-origin",
    })
      .then(function (response) {
        if (response.redirected || (response.status !== 200 && response.status !== 422)) {
          plainSubmit();
          return null;
        }
        return response.text().then(function (text) {
          try {
            onAnswer(response.status, text);
          } finally {
            done();
          }
        });
      }, plainSubmit); // the request failed (network): the plain POST, same token, so never twice
  });

  if (clear) {
    var texts = form.querySelectorAll("textarea");
    for (var k = 0; k < texts.length; k++) if (texts[k].value) clear.hidden = false; // "Try a variation"
    clear.addEventListener("click", function () {
      var boxes = form.querySelectorAll("textarea, input.span-answer, input.span-answer-start");
      for (var i = 0; i < boxes.length; i++) boxes[i].value = "";
      var radios = form.querySelectorAll('input[type="radio"]');
      for (var j = 0; j < radios.length; j++) radios[j].checked = false;
      region.replaceChildren();
      clear.hidden = true;
      var first = form.querySelector("textarea");
      if (first) first.focus();
    });
  }
})();
