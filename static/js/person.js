/* A person in the loop on the run page: the person card (the agent's question, Take control / Hand back, a message)
   is re-rendered when the run's events say it changed, and while a person has control the live view takes their
   mouse, wheel and keys, which go over the live socket to the agent's tab. Nothing typed is kept here. */
(function () {
  "use strict";
  var config = JSON.parse(document.getElementById("run-config").textContent);
  if (config.finished || !config.person_url || !window.Pilothouse) return;
  var CHANGES = [
    "run.input_requested",
    "run.input_received",
    "run.input_timed_out",
    "run.paused",
    "run.resumed",
    "sign_in.opened", // a sign-in by hand is in the operator's control once its browser is open
  ];
  var view = document.getElementById("live-view");
  var img = document.getElementById("live-img");

  function inControl() {
    var card = document.getElementById("person");
    return Boolean(card && card.dataset.control === "true");
  }

  function interactive() {
    var on = inControl();
    view.classList.toggle("interactive", on);
    view.tabIndex = on ? 0 : -1;
    view.title = on ? "You have control: click, scroll and type here" : "";
  }

  function refresh() {
    fetch(config.person_url, { credentials: "same-origin" })
      .then(function (response) {
        return response.ok ? response.text() : null;
      })
      .then(function (html) {
        var card = document.getElementById("person");
        if (html === null || !card) return;
        // What someone is typing (an answer, a note, a message) survives the card's new rendering.
        var typed = {};
        card.querySelectorAll("textarea[id], input[id]:not([type=hidden])").forEach(function (field) {
          if (field.value) typed[field.id] = field.value;
        });
        var focused = document.activeElement && card.contains(document.activeElement) ? document.activeElement.id : "";
        var holder = document.createElement("div");
        holder.innerHTML = html.trim();
        if (!holder.firstElementChild) return;
        card.replaceWith(holder.firstElementChild);
        Object.keys(typed).forEach(function (id) {
          var field = document.getElementById(id);
          if (field && !field.value) field.value = typed[id];
        });
        var again = focused && document.getElementById(focused);
        if (again) again.focus();
        interactive();
      });
  }

  function point(event) {
    var size = window.Pilothouse.liveView ? window.Pilothouse.liveView.frameSize() : null;
    var box = img.getBoundingClientRect();
    if (!size || !size.width || !box.width || !img.naturalWidth) return null;
    // The frame is drawn with object-fit: contain, so it may be letterboxed inside the element.
    var scale = Math.min(box.width / img.naturalWidth, box.height / img.naturalHeight);
    var width = img.naturalWidth * scale;
    var height = img.naturalHeight * scale;
    var x = (event.clientX - box.left - (box.width - width) / 2) / width;
    var y = (event.clientY - box.top - (box.height - height) / 2) / height;
    if (x < 0 || y < 0 || x > 1 || y > 1) return null;
    return { x: Math.round(x * size.width), y: Math.round(y * size.height) };
  }

  function send(input) {
    if (inControl() && window.Pilothouse.liveView) window.Pilothouse.liveView.send(input);
  }

  var BUTTONS = ["left", "middle", "right"];
  img.addEventListener("mousedown", function (event) {
    if (!inControl()) return;
    event.preventDefault();
    view.focus();
    var at = point(event);
    if (at) send(Object.assign({ kind: "mouse", action: "down", button: BUTTONS[event.button] || "left" }, at));
  });
  img.addEventListener("mouseup", function (event) {
    var at = inControl() && point(event);
    if (at) send(Object.assign({ kind: "mouse", action: "up", button: BUTTONS[event.button] || "left" }, at));
  });
  var lastMove = 0;
  img.addEventListener("mousemove", function (event) {
    var now = Date.now();
    if (!inControl() || now - lastMove < 100) return; // ten moves a second are plenty for hovers
    lastMove = now;
    var at = point(event);
    if (at) send(Object.assign({ kind: "mouse", action: "move" }, at));
  });
  img.addEventListener("contextmenu", function (event) {
    if (inControl()) event.preventDefault();
  });
  view.addEventListener(
    "wheel",
    function (event) {
      if (!inControl()) return;
      event.preventDefault();
      var at = point(event);
      if (at) send(Object.assign({ kind: "wheel", dx: event.deltaX, dy: event.deltaY }, at));
    },
    { passive: false },
  );
  view.addEventListener("keydown", function (event) {
    if (!inControl()) return;
    event.preventDefault();
    if (event.key.length === 1 && !event.ctrlKey && !event.metaKey && !event.altKey) {
      send({ kind: "text", text: event.key });
    } else {
      // a shortcut (Ctrl+A, Shift+Tab...) goes with the keys held, so the page sees the shortcut, not a letter
      var held = ["alt", "ctrl", "meta", "shift"].filter(function (name) {
        return event[name + "Key"];
      });
      send({ kind: "key", key: event.key, modifiers: held });
    }
  });
  document.addEventListener("paste", function (event) {
    if (!inControl() || document.activeElement !== view) return;
    var text = (event.clipboardData && event.clipboardData.getData("text")) || "";
    if (text) send({ kind: "text", text: text.slice(0, 1000) });
    event.preventDefault();
  });

  document.addEventListener("pilothouse:event", function (event) {
    if (event.detail && CHANGES.indexOf(event.detail.type) !== -1) refresh();
  });
  interactive();
})();
