/*
 * The create page's in-page verdict (progressive enhancement; annotation/views.py, create).
 *
 * Intercepts the example form's submit and POSTs the same form data with fetch and the header
 * "X-Requested-With: fetch". The server answers with an HTML fragment: the verdict (200,
 * _create_result.html) or the messages of a refused example (422, _create_errors.html). The fragment goes
 * into the live region #verdict (aria-live="polite"); the text stays in the box for "try a variation".
 * The fragment carries the form token to send next (data-client-token, data-started): after a success it
 * is a fresh one, so the same text sent again is a new example, while a double click (the button is
 * disabled while sending) never sends twice.
 *
 * The session ran out (the answer was redirected to the sign-in page, the form's data-login-url, or is a
 * 401/403): nothing was saved, and the script does NOT fall back to the plain POST (which would land on
 * a bare sign-in page and lose the text). It keeps the text and says so in #verdict, with a sign-in link
 * that opens in a new tab; every send takes the CSRF token from the CSRF cookie, which signing
 * in renews. A network failure or any other status falls back to the plain form POST, which works
 * without this script too.
 *
 * Back and the premise (a task with contexts): the form belongs to the context shown above it. The
 * server serves a form with autocomplete="off", so the browser does not put old text back into a page
 * showing a new premise, and refuses a form whose signed stamp names another context than the one it
 * sends. On every pageshow (a load, or a page restored whole from the back-forward cache) the script puts
 * the id of the context shown (the section's data-context) back into the hidden "context" field, in case
 * a browser restored an old value there: the form is then sent with the premise the writer sees, and a
 * form restored from another premise's page is refused and shown with its own. A page restored from the
 * cache may have been left while sending: its button is enabled again.
 *
 * After each answer (a verdict or a refusal) the script announces "dynabench:work-sent" on the document
 * (detail: {saved: true when the example was stored}): the page's other scripts refresh what the example
 * changed, such as a crowd study's banner (crowd/static/crowd/banner.js); this script knows none of them.
 *
 * Each text box with data-max-length gets a live counter "123 / 2,000" in code points (as the server
 * counts; the server stays the judge). Under Node the pure helpers are exported for tests
 * (tests/helpers/create_js.py runs them for tests/annotation/test_create_text_kept_when_signed_out.py
 * and tests/annotation/test_create_character_counter.py).
 */
(function () {
  "use strict";

  /* What to do with the fetch answer: "signed-out", "fragment" (200 or 422) or "plain" (the plain POST).
     ``response`` needs status, redirected and url; ``loginPath`` is the sign-in page's path. */
  function answerKind(response, loginPath) {
    if (response.status === 401 || response.status === 403) return "signed-out";
    if (response.redirected) {
      var path = "";
      try {
        path = new URL(response.url, "http://x.invalid").pathname;
      } catch (e) {
        path = "";
      }
      if (loginPath && path === loginPath) return "signed-out";
      return "plain";
    }
    if (response.status === 200 || response.status === 422) return "fragment";
    return "plain";
  }

  /* The number of code points in ``text`` (an emoji is 1, not 2 UTF-16 units), as the server counts. */
  function codePoints(text) {
    return Array.from(text || "").length;
  }

  function grouped(n) {
    return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  }

  /* The counter's text: "123 / 2,000", and past the limit "2,010 / 2,000: 10 too many". */
  function counterText(text, limit) {
    var n = codePoints(text);
    var out = grouped(n) + " / " + grouped(limit);
    if (n > limit) out += ": " + grouped(n - limit) + " too many";
    return out;
  }

  /* The value of cookie ``name`` in the cookie string ``cookies`` ("a=1; b=2"), or "". */
  function cookieValue(cookies, name) {
    var parts = (cookies || "").split(";");
    for (var i = 0; i < parts.length; i++) {
      var part = parts[i].replace(/^\s+/, "");
      if (part.indexOf(name + "=") === 0) return decodeURIComponent(part.slice(name.length + 1));
    }
    return "";
  }

  var helpers = {
    answerKind: answerKind,
    codePoints: codePoints,
    counterText: counterText,
    cookieValue: cookieValue,
  };
  if (typeof module !== "undefined" && module.exports) {
    module.exports = helpers;
    return;
  }

  var form = document.querySelector("form.example-form");
  var region = document.getElementById("verdict");
  if (!form || !region || !window.fetch || !window.FormData || !window.DOMParser) return;
  var submit = form.querySelector("button[type=submit]");
  var clear = form.querySelector("button[data-clear]");
  var tally = document.getElementById("session-tally");
  var sending = false;

  // The id of the context shown above the form back into its hidden field (see the header).
  function keepTheContextShown() {
    var shown = form.querySelector("section.context[data-context]");
    var hidden = form.querySelector('input[type="hidden"][name="context"]');
    if (shown && hidden) hidden.value = shown.getAttribute("data-context");
  }

  function setHidden(name, value) {
    var input = form.querySelector('input[type="hidden"][name="' + name + '"]');
    if (input && value) input.value = value;
  }

  function done() {
    sending = false;
    if (submit) submit.disabled = false;
    form.removeAttribute("aria-busy");
    // Disabling the focused button dropped the focus to <body>, so the next Tab would start from the top
    // of the page: give it back (the live region announces the answer).
    if (submit && (!document.activeElement || document.activeElement === document.body)) submit.focus();
  }

  function plainSubmit() {
    done();
    HTMLFormElement.prototype.submit.call(form); // fires no submit event: not intercepted again
  }

  // Signing in again renews the CSRF cookie: send its value, so Submit works after signing in elsewhere.
  function freshCsrfToken() {
    var input = form.querySelector('input[name="csrfmiddlewaretoken"]');
    var token = cookieValue(document.cookie, form.getAttribute("data-csrf-cookie") || "csrftoken");
    if (input && token) input.value = token;
  }

  function signedOut() {
    var p = document.createElement("p");
    p.className = "warning signed-out";
    p.appendChild(document.createTextNode("You are signed out. "));
    var link = document.createElement("a");
    link.href = form.getAttribute("data-login-url") || "/accounts/login/";
    link.target = "_blank";
    link.rel = "noopener";
    link.textContent = "Sign in (link opens in a new tab)";
    p.appendChild(link);
    p.appendChild(document.createTextNode(", then press Submit again: your text is kept here."));
    region.replaceChildren(p);
    done();
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
    var reset = document.querySelector("form.reset-tally"); // hidden while there was nothing to reset
    if (status === 200 && reset) reset.hidden = false;
    done();
    region.scrollIntoView({ block: "nearest" });
    document.dispatchEvent(new CustomEvent("dynabench:work-sent", { detail: { saved: status === 200 } }));
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
    freshCsrfToken();
    fetch(form.action, {
      method: "POST",
      body: new FormData(form),
      headers: { "X-Requested-With": "fetch" },
      credentials: "same-origin",
    })
      .then(function (response) {
        var kind = answerKind(response, form.getAttribute("data-login-url"));
        if (kind === "signed-out") {
          signedOut();
          return null;
        }
        if (kind === "plain") {
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

  // "Reset the tally" in the page: sent as a plain form it reloads the page and loses the text being
  // written. Without the script (or on a failed request) it is sent the plain way.
  var resetForm = document.querySelector("form.reset-tally");
  if (resetForm && tally) {
    resetForm.addEventListener("submit", function (event) {
      event.preventDefault();
      fetch(resetForm.action, { method: "POST", body: new FormData(resetForm), credentials: "same-origin" }).then(
        function (response) {
          if (!response.ok) {
            HTMLFormElement.prototype.submit.call(resetForm);
            return;
          }
          tally.textContent = tally.getAttribute("data-empty-text");
          resetForm.hidden = true;
          if (submit) submit.focus(); // the focused button is gone
        },
        function () {
          HTMLFormElement.prototype.submit.call(resetForm);
        }
      );
    });
  }

  keepTheContextShown();
  window.addEventListener("pageshow", function (event) {
    keepTheContextShown();
    if (event.persisted && sending) done(); // left while sending: the answer never came to this page
  });

  // The live character counters, after each box with a limit.
  var counted = form.querySelectorAll("textarea[data-max-length]");
  function counter(box) {
    var limit = parseInt(box.getAttribute("data-max-length"), 10);
    if (!(limit > 0)) return;
    var out = document.createElement("p");
    out.className = "muted char-count";
    out.id = (box.id || box.name) + "-count";
    out.setAttribute("aria-live", "off");
    box.insertAdjacentElement("afterend", out);
    var described = box.getAttribute("aria-describedby");
    box.setAttribute("aria-describedby", (described ? described + " " : "") + out.id);
    function update() {
      out.textContent = counterText(box.value, limit);
      out.classList.toggle("over-limit", codePoints(box.value) > limit);
    }
    box.addEventListener("input", update);
    box.updateCount = update;
    update();
  }
  for (var c = 0; c < counted.length; c++) counter(counted[c]);

  if (clear) {
    var texts = form.querySelectorAll("textarea");
    for (var k = 0; k < texts.length; k++) if (texts[k].value) clear.hidden = false; // "Try a variation"
    clear.addEventListener("click", function () {
      var boxes = form.querySelectorAll("textarea, input.span-answer, input.span-answer-start");
      for (var i = 0; i < boxes.length; i++) {
        boxes[i].value = "";
        if (boxes[i].updateCount) boxes[i].updateCount();
      }
      var radios = form.querySelectorAll('input[type="radio"]');
      for (var j = 0; j < radios.length; j++) radios[j].checked = false;
      region.replaceChildren();
      clear.hidden = true;
      var first = form.querySelector("textarea");
      if (first) first.focus();
    });
  }
})();
