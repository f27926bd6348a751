/* Take control on a browser session's page: the person says when they drive the session's page ("Take control",
   "Hand back"); static/js/control.js then sends their mouse, wheel and keys as on a run's page, and the worker that
   holds the session's browser answers each one. */
(function () {
  "use strict";
  var card = document.getElementById("person");
  var button = document.getElementById("take-control");
  if (!card || !button) return;
  button.addEventListener("click", function () {
    var on = card.dataset.control !== "true";
    card.dataset.control = on ? "true" : "false";
    button.textContent = on ? "Hand back" : "Take control";
    button.setAttribute("aria-pressed", on ? "true" : "false");
    document.dispatchEvent(new CustomEvent("pilothouse:panels")); // control.js reads the card again
  });
})();
