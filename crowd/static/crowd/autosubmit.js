// The completion page: post the MTurk form, or follow the link back to the platform, on its own.
// (A file, not inline script: the site's Content-Security-Policy runs scripts from this site only.)
(function () {
  var form = document.querySelector("form[data-autosubmit]");
  if (form) { form.submit(); return; }
  var link = document.querySelector("a[data-autofollow]");
  if (link) { window.setTimeout(function () { window.location.assign(link.href); }, 3000); }
})();
