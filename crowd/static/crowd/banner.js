// The study banner (crowd/templates/crowd/_banner.html): fetch it again when the page has sent work in place.
// The create page's script sends the example with fetch and leaves the page as it is; it then announces
// "dynabench:work-sent" on the document. This script, on every page of a participant, answers by fetching
// the banner's entries (#study-banners' data-refresh, /study/progress/) and putting them in place, so the
// progress, "Finish" and the pointer to the validate page follow each example. A failed fetch leaves the
// banner as it was (the next page load shows it right). A file, not inline script: the site's
// Content-Security-Policy runs scripts from this site only.
(function () {
  "use strict";
  var box = document.getElementById("study-banners");
  if (!box || !window.fetch || !window.DOMParser) return;
  var url = box.getAttribute("data-refresh");
  if (!url) return;

  function refresh() {
    fetch(url, { credentials: "same-origin", cache: "no-store", headers: { "X-Requested-With": "fetch" } })
      .then(function (response) {
        return response.ok ? response.text() : null;
      })
      .then(
        function (text) {
          if (text === null) return;
          var doc = new DOMParser().parseFromString("<div>" + text + "</div>", "text/html");
          var holder = doc.body.firstElementChild;
          box.replaceChildren.apply(box, Array.prototype.slice.call(holder ? holder.childNodes : []));
        },
        function () {}
      );
  }

  document.addEventListener("dynabench:work-sent", refresh);
})();
