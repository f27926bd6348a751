/* The runs list stays current: a row is re-rendered by the server whenever the workspace socket says it changed, and
   the heading's count and the pager follow with it. */
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

  // The heading's count, as the server counted the list's runs (under its filters) with the row it sent.
  var counter = document.getElementById("runs-count");
  function count(header) {
    var n = Number(header);
    if (!counter || header === null || header === "" || !isFinite(n)) return;
    counter.textContent = n + (n === 1 ? " run" : " runs");
    paginate(n);
  }

  // "Page x of y" from the same count: a run that arrives can make a second page, one that leaves a filter can take
  // it away. A page the list no longer reaches says so rather than "Page 3 of 2".
  var pager = document.getElementById("runs-pager");
  function paginate(n) {
    if (!pager) return;
    var pages = Math.max(1, Math.ceil(n / config.page_size));
    var here = config.page;
    pager.hidden = pages < 2 && here < 2;
    document.getElementById("runs-pages").textContent =
      here > pages
        ? "Page " + here + ": the list now has " + pages + (pages === 1 ? " page" : " pages")
        : "Page " + here + " of " + pages;
    document.getElementById("runs-older").hidden = here >= pages;
  }

  // The first page keeps the newest page-size runs: a run prepended there pushes the oldest to the next page.
  function trim() {
    var rows = body.querySelectorAll("tr[data-run-id]");
    for (var index = config.page_size; index < rows.length; index++) rows[index].remove();
  }

  function refresh(runId) {
    if (pending[runId]) return;
    pending[runId] = true;
    fetch(config.row_url.replace("RUN_ID", encodeURIComponent(runId)), { credentials: "same-origin" })
      .then(function (response) {
        if (!response.ok) return null;
        count(response.headers.get("X-Runs-Count"));
        var position = Number(response.headers.get("X-Runs-Position"));
        return response.text().then(function (html) {
          return { html: html, position: position };
        });
      })
      .then(function (answer) {
        delete pending[runId];
        if (!answer) return;
        var fresh = rowFromHtml(answer.html);
        var existing = document.getElementById("row-" + runId);
        if (existing) {
          existing.replaceWith(fresh);
        } else if (body.dataset.prepend === "true" && answer.position < config.page_size) {
          // A run this page does not show yet belongs here only if the server places it within the first page: a run
          // that changes further down the list, or a row trimmed off while its refresh was on the way, stays off.
          var empty = body.querySelector(".empty-row");
          if (empty) empty.remove();
          var rows = body.querySelectorAll("tr[data-run-id]");
          body.insertBefore(fresh, rows[answer.position] || null);
          trim();
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
