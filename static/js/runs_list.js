/* The runs list stays current: a row is re-rendered by the server whenever the workspace socket says it changed. */
(function () {
  "use strict";
  var config = JSON.parse(document.getElementById("live-config").textContent);
  var body = document.getElementById("runs-body");
  var pending = {};

  function rowFromHtml(html) {
    // The fragment is rendered (and escaped) by Django; it carries no raw event data.
    var template = document.createElement("template");
    template.innerHTML = html.trim();
    return template.content.firstElementChild;
  }

  function refresh(runId) {
    if (pending[runId]) return;
    pending[runId] = true;
    fetch(config.row_url.replace("RUN_ID", encodeURIComponent(runId)), { credentials: "same-origin" })
      .then(function (response) {
        return response.ok ? response.text() : null;
      })
      .then(function (html) {
        delete pending[runId];
        if (!html) return;
        var fresh = rowFromHtml(html);
        var existing = document.getElementById("row-" + runId);
        if (existing) {
          existing.replaceWith(fresh);
        } else if (body.dataset.prepend === "true") {
          var empty = body.querySelector(".empty-row");
          if (empty) empty.remove();
          body.insertBefore(fresh, body.firstElementChild);
        } else {
          return;
        }
        fresh.classList.add("flash");
      })
      .catch(function () {
        delete pending[runId];
      });
  }

  new window.Pilothouse.LiveSocket({
    path: function () {
      return config.socket;
    },
    onMessage: function (message) {
      if (message.type === "run.changed") refresh(message.run_id);
    },
    onOpen: function () {
      // Rows may have changed while the socket was away: refresh every unfinished one.
      body.querySelectorAll("tr[data-status='running'], tr[data-status='queued']").forEach(function (row) {
        refresh(row.dataset.runId);
      });
    },
  });
})();
