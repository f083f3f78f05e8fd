// The contribution form (contributions/templates/contributions/contribute_*.html). A new contribution's
// first step names itself in the address (/contribute/new/?form=<token>, its data-replace-url): the server
// maps that token to the draft the step creates, so Back or a reload to it opens the saved draft instead
// of an empty form that would refuse its own task key. No inline script: the CSP forbids them.
(function () {
  "use strict";
  function nameTheNewForm() {
    var form = document.querySelector("form[data-replace-url]");
    if (!form || !window.history || !window.history.replaceState) return;
    var url = form.getAttribute("data-replace-url");
    if (url && window.location.pathname + window.location.search !== url) {
      window.history.replaceState({ htmx: true }, "", url);
    }
  }
  document.addEventListener("DOMContentLoaded", nameTheNewForm);
  document.addEventListener("htmx:afterSettle", nameTheNewForm);
})();
