// graymatter dashboard: progressive enhancement only; every page works without this file.
(function () {
  "use strict";
  // "/" focuses the search or filter field, as in many web apps (not while typing in a field).
  document.addEventListener("keydown", function (event) {
    if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey) return;
    var tag = (event.target && event.target.tagName) || "";
    if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT") return;
    var field = document.querySelector("form.search input[name=q], form.filters select");
    if (field) { event.preventDefault(); field.focus(); }
  });
  // Destructive buttons ask first.
  document.addEventListener("submit", function (event) {
    var form = event.target;
    var action = form.querySelector("input[name=action]");
    var which = action ? action.value : (event.submitter && event.submitter.value);
    if ((which === "forget" || which === "revoke") && !window.confirm("Really " + which + "?")) {
      event.preventDefault();
    }
  });
})();
