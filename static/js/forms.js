// Forms on every page (templates/base.html). No inline script: the CSP forbids them.
// - After a form is answered with errors, focus moves to the first field in error (else to the form's own
//   error list: .form-errors, or Django's .errorlist), so a keyboard or screen-reader user lands on what to
//   fix instead of the top of the page.
// - A button with data-copy="ID" copies the value of the element ID (e.g. a new API token) and says so in
//   the element its aria-controls names; it stays hidden without this script, whose job it is.
(function () {
  "use strict";
  function focusFirstError(root) {
    var field = root.querySelector('form[method="post"] [aria-invalid="true"]');
    if (!field) {
      field = root.querySelector('form[method="post"] :is(.form-errors, .errorlist)');
      if (field && !field.hasAttribute("tabindex")) field.setAttribute("tabindex", "-1");
    }
    if (field) field.focus();
  }
  function copy(button) {
    var source = document.getElementById(button.getAttribute("data-copy"));
    var status = document.getElementById(button.getAttribute("aria-controls") || "");
    if (!source) return;
    var text = source.value !== undefined ? source.value : source.textContent;
    function said(words) {
      if (status) status.textContent = words;
    }
    function byHand() {
      source.select && source.select();
      said(document.execCommand && document.execCommand("copy") ? "Copied." : "Select it and copy it.");
    }
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(text).then(function () { said("Copied."); }, byHand);
    } else {
      byHand();
    }
  }
  function wire(root) {
    root.querySelectorAll("button[data-copy]").forEach(function (button) {
      button.hidden = false;
    });
  }
  document.addEventListener("DOMContentLoaded", function () {
    wire(document);
    focusFirstError(document);
  });
  document.addEventListener("htmx:afterSettle", function (event) {
    wire(event.target);
    focusFirstError(event.target);
  });
  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("button[data-copy]");
    if (button) copy(button);
  });
})();
