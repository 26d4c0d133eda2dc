/*
 * The arena's pages (progressive enhancement; generative_bench/arena/views.py). Without this script the
 * forms post as they are and the page comes back once both models have answered. With it, a form's
 * buttons are disabled once it is sent (a double click sends once; the client token and the vote's
 * conditional update keep the server's rule anyway), and the page says the models are answering.
 */
(function () {
  "use strict";
  document.querySelectorAll("form.arena-start, form.arena-vote").forEach(function (form) {
    form.addEventListener("submit", function (event) {
      if (form.dataset.sent) {
        event.preventDefault();
        return;
      }
      form.dataset.sent = "1";
      // Disabled after this tick: a button disabled now would not send its own name and value.
      window.setTimeout(function () {
        document.querySelectorAll("form.arena-start button, form.arena-vote button").forEach(function (b) {
          b.disabled = true;
        });
      }, 0);
      var status = document.querySelector(".arena-status");
      var next = form.querySelector("textarea[name=follow_up]");
      if (status && (form.classList.contains("arena-start") || (next && next.value.trim()))) {
        status.textContent = "The two models are answering; this takes a few seconds…";
      }
    });
  });
})();
