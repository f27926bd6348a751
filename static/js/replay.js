/* Replay: step through the run's screenshots with the agent's message, action and result of each step side by
   side; arrows move, Home/End jump, Esc closes. Every text is drawn with textContent (page and model text). */
(function () {
  "use strict";
  var steps = JSON.parse(document.getElementById("replay-steps").textContent) || [];
  var dialog = document.getElementById("replay");
  var opener = document.getElementById("replay-open");
  var scrub = document.getElementById("replay-scrub");
  var index = 0;
  var messages = {};
  var uses = {};
  var lastMessage = "";

  function set(id, text) {
    document.getElementById(id).textContent = text === undefined || text === null ? "" : String(text);
  }

  function show(at) {
    if (!steps.length) return;
    index = Math.max(0, Math.min(steps.length - 1, at));
    var step = steps[index];
    document.getElementById("replay-img").src = step.screenshot;
    set("replay-url", "#" + step.seq + " " + (step.url || ""));
    set("replay-position", "step " + (index + 1) + " of " + steps.length);
    set("replay-message", step.message || "—");
    set("replay-action", step.action);
    var input = step.input === null || step.input === undefined ? "" : JSON.stringify(step.input, null, 2);
    set("replay-input", input);
    document.getElementById("replay-input").hidden = !input;
    set("replay-result", step.result);
    document.getElementById("replay-result-block").hidden = !step.result;
    document.getElementById("replay-result").classList.toggle("error", !!step.is_error);
    scrub.max = String(steps.length);
    scrub.value = String(index + 1);
    dialog.dataset.seq = String(step.seq);
    document.getElementById("replay-prev").disabled = index === 0;
    document.getElementById("replay-next").disabled = index === steps.length - 1;
  }

  function open() {
    if (!steps.length) return;
    dialog.hidden = false;
    document.body.classList.add("replaying");
    show(index);
    document.getElementById("replay-next").focus();
  }

  function close() {
    dialog.hidden = true;
    document.body.classList.remove("replaying");
    opener.focus();
  }

  opener.addEventListener("click", open);
  document.getElementById("replay-close").addEventListener("click", close);
  document.getElementById("replay-prev").addEventListener("click", function () {
    show(index - 1);
  });
  document.getElementById("replay-next").addEventListener("click", function () {
    show(index + 1);
  });
  scrub.addEventListener("input", function () {
    show(parseInt(scrub.value, 10) - 1);
  });
  dialog.addEventListener("click", function (click) {
    if (click.target === dialog) close();
  });
  document.addEventListener("keydown", function (key) {
    if (dialog.hidden) return;
    var moves = { ArrowLeft: index - 1, ArrowRight: index + 1, Home: 0, End: steps.length - 1 };
    if (key.key in moves) {
      key.preventDefault();
      show(moves[key.key]);
    } else if (key.key === "Escape") {
      key.preventDefault();
      close();
    }
  });

  // Steps of a run still going are added as their screenshots arrive.
  document.addEventListener("pilothouse:event", function (event) {
    var e = event.detail || {};
    var d = e.data || {};
    if (e.type === "agent.message") {
      messages[d.turn] = (messages[d.turn] || "") + String(d.text || "");
      lastMessage = messages[d.turn];
    }
    if (e.type === "agent.tool_use") uses[d.id] = d;
    if ((e.type === "agent.tool_result" || e.type === "agent.final_view") && d.screenshot_url) {
      var final = e.type === "agent.final_view";
      var use = uses[d.tool_use_id] || {};
      steps.push({
        seq: e.seq,
        screenshot: d.screenshot_url,
        url: d.url || "",
        message: final ? lastMessage : messages[d.turn] || "",
        action: final ? "Final view" : String(use.name || d.name || ""),
        input: final ? null : use.input,
        result: final ? "" : window.Pilothouse.resultText(d.content).slice(0, 2000),
        is_error: !!d.is_error,
      });
      opener.hidden = false;
      if (!dialog.hidden) show(index);
    }
  });
})();
