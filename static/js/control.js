/* Take control on the run page: while a person has control (the person card's data-control), the live view takes
   their mouse, wheel and keys and sends each over the live socket with a number. The worker that holds the agent's
   tab answers every one (applied, or why not); the page says in words, within a second, when one did not reach the
   tab, and withdraws control as soon as the tab can no longer be driven: the run ended, its browser closed, its
   worker was lost or stopped answering. Nothing typed is kept here. */
(function () {
  "use strict";
  var config = JSON.parse(document.getElementById("run-config").textContent);
  // A run's page offers control through its person card (panels_url); a browser session's page always does (control).
  if (config.finished || !(config.panels_url || config.control)) return;
  if (!window.Pilothouse || !window.Pilothouse.liveView) return;
  var liveView = window.Pilothouse.liveView;
  var view = document.getElementById("live-view");
  var img = document.getElementById("live-img");
  var caption = document.getElementById("live-caption");

  // How long an input may wait for the worker's answer before the page says it did not reach the tab, how often a
  // quiet person's control is checked, and how many checks in a row may go unanswered before control is withdrawn.
  var ANSWER_MS = 1000;
  var PROBE_MS = 3000;
  var UNANSWERED_PROBES = 2;
  var REASONS = {
    not_in_control: "You do not have control of this run now: your input was not sent.",
    invalid: "That input could not be sent.",
    agent_acting: "The agent is finishing its turn: your input was not applied. Try again in a moment.",
    no_page: "The run has no open tab to take your input.",
    failed: "The tab did not take your input.",
    timeout: "The tab took too long to take your input.",
  };
  var NO_ANSWER = "Your input has not reached the run's browser: its worker did not answer within a second.";
  var NOT_ANSWERING =
    "The run's browser is not answering (its worker may be gone): control is withdrawn until it does.";

  var status = document.createElement("p");
  status.id = "control-status";
  status.setAttribute("role", "status");
  status.hidden = true;
  caption.after(status);

  var nextId = 1;
  var waiting = {}; // input number -> [sent at, is a probe]
  var overdue = {}; // inputs the page said did not reach the tab in time
  var answered = 0;
  var lastSent = 0;
  var unansweredProbes = 0;
  var withdrawn = ""; // why control cannot be offered now ("" while it can)
  var ended = false;

  function say(text, failing) {
    status.textContent = text;
    status.className = failing ? "error" : "hint";
    status.hidden = !text;
  }

  function offered() {
    var card = document.getElementById("person");
    return Boolean(card && card.dataset.control === "true");
  }

  function inControl() {
    return offered() && !withdrawn;
  }

  function interactive() {
    var on = inControl();
    view.classList.toggle("interactive", on);
    view.tabIndex = on ? 0 : -1;
    view.title = on ? "You have control: click, scroll and type here" : "";
    view.dataset.control = on ? "on" : withdrawn ? "withdrawn" : "off";
    if (withdrawn) say(withdrawn, true);
    if (on && !lastSent) probe();
  }

  function withdraw(why, forGood) {
    if (ended) return;
    ended = Boolean(forGood);
    withdrawn = why;
    waiting = {};
    overdue = {};
    if (forGood) {
      // What offers control on this page is no longer true: nothing here may be pressed to take or hand it back.
      ["pause-form", "resume-form", "control-hint", "take-control"].forEach(function (id) {
        var node = document.getElementById(id);
        if (node) node.remove();
      });
    }
    interactive();
  }

  function restore() {
    if (ended || !withdrawn) return;
    withdrawn = "";
    unansweredProbes = 0;
    say("", false);
    interactive();
  }

  function send(input, isProbe) {
    if (!isProbe && !inControl()) return;
    var id = nextId++;
    if (!liveView.send(Object.assign({ id: id }, input))) {
      if (!isProbe) say("The live connection is down: your input was not sent. It reconnects by itself.", true);
      return;
    }
    lastSent = Date.now();
    waiting[id] = [lastSent, Boolean(isProbe)];
  }

  function probe() {
    if (offered() && !ended) send({ kind: "probe" }, true);
  }

  function answer(message) {
    var sent = waiting[message.id] || overdue[message.id];
    if (!sent) return; // another page's
    delete waiting[message.id];
    if (overdue[message.id]) {
      delete overdue[message.id];
      if (!Object.keys(overdue).length && status.textContent === NO_ANSWER) say("", false); // it came after all
    }
    var ok = message.type === "input_ack" && message.ok;
    if (message.type === "input_ack") {
      unansweredProbes = 0;
      restore(); // a worker answered: the tab is reachable again
    }
    if (ok) {
      if (!sent[1]) answered += 1;
      view.dataset.acked = String(answered); // the person's inputs the tab took (checks of control not counted)
      if (!withdrawn && status.className === "error") say("", false);
    } else if (!sent[1] || message.reason !== "agent_acting") {
      say(REASONS[message.reason] || "Your input was not applied.", true);
    }
  }

  window.setInterval(function () {
    var now = Date.now();
    Object.keys(waiting).forEach(function (id) {
      var sent = waiting[id];
      if (now - sent[0] < ANSWER_MS) return;
      delete waiting[id];
      if (sent[1]) {
        unansweredProbes += 1;
        if (unansweredProbes >= UNANSWERED_PROBES) withdraw(NOT_ANSWERING, false);
      } else {
        overdue[id] = sent; // said now; if its answer still comes, the page says so
        say(NO_ANSWER, true);
        view.dataset.unanswered = String(Number(view.dataset.unanswered || 0) + 1);
      }
    });
    if (offered() && !ended && now - lastSent >= PROBE_MS) probe();
  }, 250);

  document.addEventListener("pilothouse:live", function (event) {
    var message = event.detail || {};
    if (message.type === "input_ack" || message.type === "input_refused") answer(message);
    if (message.type === "ended") withdraw("The run's browser has closed: there is nothing left to control.", true);
  });
  document.addEventListener("pilothouse:event", function (event) {
    var type = event.detail && event.detail.type;
    if (type === "run.finished") withdraw("The run has ended: there is nothing left to control.", true);
    if (type === "run.worker_lost") withdraw("The run's worker was lost: control comes back when another continues.");
    if (type === "run.recovered") restore();
  });
  document.addEventListener("pilothouse:panels", interactive); // the person card was rendered again (run_panels.js)

  function point(event) {
    var size = liveView.frameSize();
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

  interactive();
})();
