/* The run page's panels that follow the run's state (the header's actions with Make recipe, the person card, the
   files, the follow-up card) are re-rendered by the server whenever an event changes what they show, so the page never
   offers a control the server would refuse; what someone is typing and a fold they opened survive the new rendering.
   The server's HTML is rendered and escaped by Django from the database, never from the socket's event data. */
(function () {
  "use strict";
  var config = JSON.parse(document.getElementById("run-config").textContent);
  var PANELS = ["run-actions", "person", "run-files", "follow-up"];
  // The event types that change what these panels show, from the server's registry (runs.event_types).
  var CHANGES = window.Pilothouse.asSet(config.event_types.panels);

  // The one rule for the Take control button: runs.human.pause takes a running agent run that no person controls yet.
  function takeControlOffered(card) {
    return card.dataset.kind === "agent" && card.dataset.status === "running" && card.dataset.paused !== "true";
  }

  function offer() {
    var card = document.getElementById("person");
    var form = document.getElementById("pause-form");
    if (card && form) form.hidden = !takeControlOffered(card);
  }

  // Once the run has ended the server takes no answer, message, pause, cancel or save: withdrawn at once, before the
  // panels' new rendering arrives.
  function withdraw() {
    var card = document.getElementById("person");
    if (card) {
      card.hidden = true;
      card.dataset.status = "finished";
      card.dataset.control = "false";
    }
    ["cancel-form", "sign-in-save-form"].forEach(function (id) {
      var form = document.getElementById(id);
      if (form) form.remove();
    });
  }

  function kept(panel) {
    var state = { values: {}, open: {}, focused: "" };
    panel.querySelectorAll("textarea[id], input[id]:not([type=hidden]):not([type=checkbox])").forEach(function (field) {
      if (field.value) state.values[field.id] = field.value;
    });
    panel.querySelectorAll("details[id]").forEach(function (details) {
      state.open[details.id] = details.open;
    });
    if (document.activeElement && panel.contains(document.activeElement)) state.focused = document.activeElement.id;
    return state;
  }

  function restore(state) {
    Object.keys(state.values).forEach(function (id) {
      var field = document.getElementById(id);
      if (field && !field.value) field.value = state.values[id];
    });
    Object.keys(state.open).forEach(function (id) {
      var details = document.getElementById(id);
      if (details) details.open = state.open[id];
    });
    var again = state.focused && document.getElementById(state.focused);
    if (again) again.focus();
  }

  var asked = 0;
  var timer = null;
  function refresh() {
    window.clearTimeout(timer);
    timer = window.setTimeout(function () {
      var mine = ++asked;
      fetch(config.panels_url, { credentials: "same-origin" })
        .then(function (response) {
          return response.ok ? response.text() : null;
        })
        .then(function (html) {
          if (html === null || mine !== asked) return; // a later rendering is on its way
          var template = document.createElement("template");
          template.innerHTML = html.trim();
          PANELS.forEach(function (id) {
            var fresh = template.content.getElementById(id);
            var old = document.getElementById(id);
            if (!old) return;
            if (!fresh) {
              old.remove();
              return;
            }
            var state = kept(old);
            old.replaceWith(fresh);
            restore(state);
          });
          offer();
          document.dispatchEvent(new CustomEvent("pilothouse:panels"));
        });
    }, 100);
  }

  document.addEventListener("pilothouse:event", function (event) {
    var type = event.detail && event.detail.type;
    if (type === "run.finished") withdraw();
    if (CHANGES[type]) refresh();
  });
  offer();
  window.Pilothouse.runPanels = { refresh: refresh, takeControlOffered: takeControlOffered };
})();
