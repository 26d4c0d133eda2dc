// The Task admin's owner picker (Django's autocomplete, select2): gives select2's search box the name of
// its field ("Search Owners by username"), which select2 4.0 leaves unlabelled. Without JavaScript the
// field is a plain multiple select of the current owners.
(function () {
  "use strict";

  function fieldName(search) {
    var container = search.closest(".select2-container");
    var select = container && container.previousElementSibling;
    var label = select && select.id ? document.querySelector('label[for="' + select.id + '"]') : null;
    return label ? label.textContent.replace(/:\s*$/, "").trim() : "";
  }

  function labelSearchBoxes() {
    Array.prototype.forEach.call(document.querySelectorAll(".select2-search__field:not([aria-label])"), function (search) {
      var name = fieldName(search);
      search.setAttribute("aria-label", name ? "Search " + name.toLowerCase() + " by username" : "Search");
    });
  }

  // An open combobox names the list it controls (select2 4.0 gives only aria-owns on the search box).
  function linkOpenLists() {
    Array.prototype.forEach.call(document.querySelectorAll(".select2-selection[role=combobox]"), function (box) {
      var container = box.closest(".select2-container");
      var select = container && container.previousElementSibling;
      var list = select && select.id ? document.getElementById("select2-" + select.id + "-results") : null;
      if (box.getAttribute("aria-expanded") === "true" && list) {
        if (box.getAttribute("aria-controls") !== list.id) box.setAttribute("aria-controls", list.id);
      } else if (box.hasAttribute("aria-controls")) {
        box.removeAttribute("aria-controls");
      }
    });
  }

  function update() {
    labelSearchBoxes();
    linkOpenLists();
  }

  // With the search box working, the no-JavaScript "Add owners by username" row is not needed.
  function hideTypedOwners() {
    var owners = document.getElementById("id_owners");
    var row = document.querySelector(".form-row.field-add_owners");
    var typed = document.getElementById("id_add_owners");
    if (owners && row && typed && !typed.value && owners.nextElementSibling &&
        owners.nextElementSibling.classList.contains("select2-container")) {
      row.hidden = true;
    }
  }

  function start() {
    update();
    hideTypedOwners();
    new MutationObserver(update).observe(document.body, {
      childList: true, subtree: true, attributes: true, attributeFilter: ["aria-expanded"]
    });
  }

  if (document.readyState === "complete") {
    start();
  } else {
    window.addEventListener("load", start);
  }
})();
