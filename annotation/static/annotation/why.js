/*
 * "Why did the model decide?" (annotation/templates/annotation/_why.html): when a
 * <details data-why-url> opens for the first time, fetch the attributions fragment
 * (annotation/why_views.py, header X-Requested-With: fetch) and put it in place of the plain link.
 * On failure the link stays, with a short message. Listens on the document (toggle does not bubble,
 * so in the capture phase): details inserted after this script loaded work too. Loaded twice, it
 * binds once.
 */
(function () {
  "use strict";
  if (window.dynabenchWhy) return;
  window.dynabenchWhy = true;

  function load(details) {
    if (details.dataset.whyState) return;
    details.dataset.whyState = "loading";
    var body = details.querySelector(".why-body");
    if (!body) return;
    var status = document.createElement("p");
    status.className = "muted";
    status.textContent = "Working out which words mattered…";
    body.appendChild(status);
    fetch(details.dataset.whyUrl, {
      credentials: "same-origin",
      headers: { "X-Requested-With": "fetch", Accept: "text/html" },
    })
      .then(function (response) {
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.text();
      })
      .then(function (html) {
        body.innerHTML = html; // server-rendered, escaped by Django templates, same origin
        details.dataset.whyState = "done";
      })
      .catch(function () {
        status.textContent = "Could not load the explanation here; the link above opens it as a page.";
        details.dataset.whyState = "";
      });
  }

  document.addEventListener(
    "toggle",
    function (event) {
      var details = event.target;
      if (details && details.matches && details.matches("details[data-why-url]") && details.open) load(details);
    },
    true
  );
})();
