/* The batch page stays current: when the workspace socket says one of the batch's runs changed, or the batch itself
   (it launched runs, finished or was cancelled), the page is read again and its live parts are swapped in. */
(function () {
  "use strict";
  var config = JSON.parse(document.getElementById("live-config").textContent);
  var loading = false;
  var again = false;

  function status() {
    return document.getElementById("batch-head").dataset.status;
  }

  function knowsRun(runId) {
    // Every launched run of the batch, on any page of its runs table (the element is a live part: it grows).
    return document.getElementById("batch-run-ids").dataset.ids.split(" ").indexOf(runId) !== -1;
  }

  function swapParts(html) {
    // The page is rendered (and escaped) by Django, the same template the first load used.
    var fresh = new DOMParser().parseFromString(html, "text/html");
    document.querySelectorAll("[data-live-part]").forEach(function (part) {
      var replacement = fresh.getElementById(part.id);
      if (replacement) part.replaceWith(document.importNode(replacement, true));
    });
    var form = document.getElementById("rejudge-form");
    if (form) form.hidden = status() === "running";
  }

  function refresh() {
    if (loading) {
      again = true;
      return;
    }
    loading = true;
    fetch(window.location.href, { credentials: "same-origin" })
      .then(function (response) {
        return response.ok ? response.text() : null;
      })
      .then(function (html) {
        if (html) swapParts(html);
      })
      .catch(function () {})
      .then(function () {
        loading = false;
        if (again) {
          again = false;
          refresh();
        }
      });
  }

  new window.Pilothouse.LiveSocket({
    path: function () {
      return config.socket;
    },
    onMessage: function (message) {
      if (message.type === "batch.changed" && message.batch_id === config.batch_id) refresh();
      if (message.type === "run.changed" && knowsRun(message.run_id)) refresh();
    },
    onOpen: function () {
      // The batch may have moved on between the page's render and this socket (or while it was away).
      refresh();
    },
  });
})();
