/* The live viewer: events arrive over the run's socket and are drawn with textContent only (they carry page text and
   model output, which must never become markup); result panels are re-rendered by the server when the run ends. */
(function () {
  "use strict";
  var resultText = window.Pilothouse.resultText;
  var asSet = window.Pilothouse.asSet;
  var config = JSON.parse(document.getElementById("run-config").textContent);
  var timeline = document.getElementById("timeline");
  var lastSeq = config.last_seq;
  var turns = config.turns;
  var usage = {
    requests: config.usage.requests,
    total: config.usage.total,
    output: config.usage.output,
    cache_read: config.usage.cache_read,
    cost: parseFloat(config.usage.cost) || 0,
  };
  var currentTurn = null;
  var lastTurnSep = timeline.querySelectorAll(".turn-sep");
  if (lastTurnSep.length) currentTurn = parseInt(lastTurnSep[lastTurnSep.length - 1].dataset.turn, 10);
  // The summary (verdict, judge, signals, usage) and the header's numbers are re-read from the server together on
  // these, so no two panels of the page disagree. The event types come from the server's registry (runs.event_types).
  var SUMMARY_TYPES = asSet(config.event_types.summary);
  var REFUSED = ["verdict_required", "Not executed"];
  var actionTurns = turns;
  var replyActed = {};
  timeline.querySelectorAll(".turn-sep[data-action]").forEach(function (sep) {
    replyActed[sep.dataset.turn] = true;
    actionTurns = Math.max(actionTurns, parseInt(sep.dataset.action, 10) || 0);
  });

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function clock(iso) {
    return typeof iso === "string" && iso.length >= 19 ? iso.substr(11, 8) : "";
  }

  function meta(event, kind, extras) {
    var row = el("div", "ev-meta");
    row.appendChild(el("span", "seq", "#" + event.seq));
    row.appendChild(el("span", "kind", kind));
    (extras || []).forEach(function (node) {
      row.appendChild(node);
    });
    row.appendChild(el("time", "", clock(event.processed_at)));
    return row;
  }

  function badge(className, text) {
    return el("span", "badge " + className, text);
  }

  function resultLines(data) {
    var lines = resultText(data.content)
      .split("\n")
      .map(function (text) {
        return { text: text, notice: text.indexOf("[notice]") === 0 };
      });
    var known = {};
    lines.forEach(function (line) {
      if (line.notice) known[line.text] = true;
    });
    (data.notices || []).forEach(function (notice) {
      var text = String(notice).indexOf("[notice]") === 0 ? String(notice) : "[notice] " + notice;
      if (!known[text]) lines.push({ text: text, notice: true });
    });
    return lines;
  }

  function plural(count, one, many) {
    return count + " " + (count === 1 ? one : many);
  }

  // The sentence the server says from the same summary (runs.profiles.models.what_save_stores).
  function saveStores(d) {
    var parts = [];
    var cookies = (d.cookies || []).map(function (item) {
      return item.domain + " (" + plural(item.count, "cookie", "cookies") + ")";
    });
    if (cookies.length) parts.push("cookies for " + cookies.join(", "));
    if (d.local_storage_origins)
      parts.push("local storage for " + plural(d.local_storage_origins, "origin", "origins"));
    if (d.indexed_db_origins) parts.push("IndexedDB for " + plural(d.indexed_db_origins, "origin", "origins"));
    if (!parts.length) return "Save will store an empty profile: the browser holds no cookies and no storage yet";
    return "Save will store " + parts.join(", ");
  }

  function compact(event, kind) {
    var item = el("li", "ev ev-compact");
    item.appendChild(meta(event, kind));
    return item;
  }

  function render(event) {
    var d = event.data || {};
    var item;
    var body;
    var parts; // pieces of a one-line summary, joined
    var kept;
    switch (event.type) {
      case "agent.message":
        item = el("li", "ev ev-message");
        item.appendChild(meta(event, "Claude"));
        item.appendChild(el("div", "ev-body", d.text));
        break;
      case "agent.tool_use":
        item = el("li", "ev ev-tool_use");
        item.appendChild(
          meta(event, "Tool use", [el("span", "toolname", d.name), el("span", "faint", d.toolset || "")]),
        );
        body = el("div", "ev-body");
        body.appendChild(el("pre", "", JSON.stringify(d.input === undefined ? null : d.input, null, 2)));
        item.appendChild(body);
        break;
      case "agent.tool_result":
        item = el("li", "ev ev-tool_result" + (d.is_error ? " is-error" : ""));
        var extras = [el("span", "toolname", d.name)];
        if (d.screenshot_url) {
          var link = el("a", "shot-ref", "screenshot");
          link.href = d.screenshot_url;
          link.dataset.shot = event.seq;
          extras.push(link);
        }
        item.appendChild(meta(event, d.is_error ? "Error" : "Result", extras));
        body = el("div", "ev-body");
        if (d.url) body.appendChild(el("div", "page-url", d.url));
        var pre = el("pre");
        resultLines(d).forEach(function (line, index) {
          if (index) pre.appendChild(document.createTextNode("\n"));
          pre.appendChild(el("span", "line" + (line.notice ? " notice" : ""), line.text));
        });
        body.appendChild(pre);
        item.appendChild(body);
        break;
      case "agent.usage":
        parts = ["usage", d.source, d.model];
        if (d.speed && d.speed !== "standard") parts.push(d.speed);
        parts.push(d.input_tokens + " in / " + d.output_tokens + " out");
        parts.push("cache " + d.cache_read_input_tokens + " read / " + d.cache_creation_input_tokens + " write");
        parts.push("$" + d.cost_usd);
        if (d.unpriced) parts.push("unpriced");
        item = compact(event, parts.join(" · "));
        break;
      case "context.cleared":
        kept = [d.screenshots + " screenshots", d.page_texts + " page texts"];
        if (d.exchanges) kept.push(d.exchanges + " exchanges");
        parts = ["Context cleared at turn " + d.turn, kept.join(", ") + " left what is sent"];
        parts.push(d.tokens_saved + " tokens saved (" + d.reason + ")");
        item = compact(event, parts.join(" · "));
        break;
      case "context.compacted":
        item = compact(
          event,
          "Context compacted by the API at turn " + d.turn + " · " + d.tokens_saved + " tokens saved",
        );
        break;
      case "run.started":
        item = compact(
          event,
          "Run started · " + d.model + " · up to " + d.max_turns + " turns" + (d.scripted ? " · scripted" : ""),
        );
        break;
      case "browser.restarted":
        item = compact(
          event,
          "Browser restarted (" +
            d.recovery +
            ") · " +
            (d.cause === "renderer_crash"
              ? "its tab crashed: a fresh tab, same session"
              : "Chromium exited: a fresh browser from the last saved state") +
            (d.url ? " · " + d.url : ""),
        );
        break;
      case "run.worker_lost":
      case "run.handed_over":
        item = compact(
          event,
          (event.type === "run.worker_lost" ? "Worker lost" : "Worker stopping") +
            " · " +
            d.worker +
            " · handed over after turn " +
            d.checkpoint_turn,
        );
        break;
      case "run.recovered":
        item = compact(
          event,
          "Continued on " +
            d.worker +
            " from turn " +
            d.from_turn +
            " · " +
            (d.cause === "drain" ? "its worker was stopping" : "its worker was lost"),
        );
        break;
      case "agent.final_view":
        item = compact(event, "Final view" + (d.url ? " · " + d.url : "") + (d.title ? " · " + d.title : ""));
        break;
      case "agent.target":
        item = compact(
          event,
          "Acted on " + (d.target ? d.target.role + " '" + d.target.name + "'" : "a point of the page"),
        );
        break;
      case "recipe.step":
        item = compact(event, "Recipe step " + d.step + " · " + d.line + (d.done ? "" : " · not done: " + d.why));
        break;
      case "recipe.healing":
        item = compact(event, "Healing from step " + d.step + ": " + d.why + " · the agent takes over");
        break;
      case "run.input_requested":
        item = compact(event, "Asked the operator · " + d.question + (d.secret ? " · the answer is kept secret" : ""));
        break;
      case "sign_in.opened":
        item = compact(
          event,
          d.error
            ? "The sign-in browser could not open " + d.url + ": " + d.error
            : "Sign-in browser opened at " + d.url,
        );
        break;
      case "sign_in.state":
        item = compact(
          event,
          "Browser state · " +
            (d.looks_signed_in
              ? "looks signed in to " + d.host
              : d.host
                ? "not signed in to " + d.host + " yet"
                : "no page yet") +
            " · " +
            saveStores(d),
        );
        break;
      case "run.finished":
        item = el("li", "ev ev-finished");
        item.appendChild(meta(event, "Run finished"));
        body = el("div", "ev-body");
        body.appendChild(badge("st-" + d.status, d.status));
        if (d.error_code && d.error_code !== d.status) body.appendChild(el("span", "error", " " + d.error_code));
        if (d.error_message) body.appendChild(document.createTextNode(" " + d.error_message));
        item.appendChild(body);
        break;
      case "run.waiting":
        item = el("li", "ev ev-compact ev-waiting");
        var kind;
        if (d.reason === "workspace_limit") {
          kind = el(
            "span",
            "kind",
            "Waiting for a slot: the workspace already has " +
              d.max_concurrent_runs +
              " runs with the workers, its limit; it starts in launch order when one of them ends",
          );
        } else {
          var behind = el("a", "mono", d.behind);
          behind.href = "/runs/" + encodeURIComponent(d.behind || "") + "/";
          kind = el("span", "kind", "Queued behind ");
          kind.appendChild(behind);
          kind.appendChild(
            document.createTextNode(
              ", the session's earlier run: it starts in that run's browser state when that run ends",
            ),
          );
        }
        var row = el("div", "ev-meta");
        row.appendChild(el("span", "seq", "#" + event.seq));
        row.appendChild(kind);
        row.appendChild(el("time", "", clock(event.processed_at)));
        item.appendChild(row);
        break;
      case "run.judged":
        item = el("li", "ev ev-judged");
        item.appendChild(meta(event, "Judged", [badge("v-" + d.verdict, d.verdict)]));
        item.appendChild(el("div", "ev-body", d.reason));
        break;
      case "span.outcome_evaluation_start":
        item = compact(event, "Outcome evaluation " + d.iteration + " started");
        break;
      case "span.outcome_evaluation_end":
        item = el("li", "ev ev-eval-end");
        item.appendChild(meta(event, "Outcome evaluation " + d.iteration, [badge("ev-" + d.result, d.result)]));
        item.appendChild(el("div", "ev-body", d.explanation));
        break;
      default:
        item = el("li", "ev ev-compact ev-other");
        item.appendChild(meta(event, event.type));
        body = el("div", "ev-body");
        body.appendChild(el("pre", "", JSON.stringify(d, null, 2)));
        item.appendChild(body);
    }
    if (FOLDED[event.type] || !KNOWN[event.type]) fold(item);
    item.dataset.seq = event.seq;
    item.dataset.type = event.type;
    return item;
  }

  // A step with a body (a message, a tool call, its result) folds to its one-line summary, as the server draws it;
  // steps drawn live follow the page's last collapse-all or expand-all.
  var FOLDED = { "agent.message": 1, "agent.tool_use": 1, "agent.tool_result": 1 };
  // The types the server's timeline draws its own way (templates/runs/_event.html); any other shows its raw data.
  var KNOWN = asSet(config.event_types.drawn);
  var foldOpen = true;
  function fold(item) {
    var row = item.querySelector(".ev-meta");
    var body = item.querySelector(".ev-body");
    if (!row || !body) return;
    var details = el("details", "ev-fold");
    details.open = foldOpen;
    var summary = el("summary", "ev-meta");
    while (row.firstChild) summary.appendChild(row.firstChild);
    details.appendChild(summary);
    details.appendChild(body);
    row.replaceWith(details);
  }
  function foldAll(open) {
    foldOpen = open;
    timeline.querySelectorAll("details.ev-fold").forEach(function (details) {
      details.open = open;
    });
  }
  document.getElementById("timeline-collapse").addEventListener("click", function () {
    foldAll(false);
  });
  document.getElementById("timeline-expand").addEventListener("click", function () {
    foldAll(true);
  });

  function setText(id, value) {
    var node = document.getElementById(id);
    if (node) node.textContent = String(value);
  }

  function showTurns() {
    setText("turns", turns);
    var bar = document.getElementById("budget");
    if (!bar) return; // a sign-in by hand has no agent and no turn budget
    var percent = config.max_turns ? Math.min(100, Math.round((100 * turns) / config.max_turns)) : 0;
    bar.firstElementChild.style.width = percent + "%";
    bar.classList.toggle("warn", percent >= 75 && percent < 100);
    bar.classList.toggle("over", percent >= 100);
    bar.setAttribute("aria-valuenow", String(turns));
  }

  function showUsage() {
    setText("usage-total", usage.total.toLocaleString("en-US"));
    setText("usage-requests", usage.requests);
    setText("usage-requests-s", usage.requests === 1 ? "" : "s");
    setText("usage-output", usage.output.toLocaleString("en-US"));
    setText("usage-cache", usage.cache_read.toLocaleString("en-US"));
    setText("usage-cost", usage.cost.toFixed(4));
    var cap = document.getElementById("cost-cap");
    var limit = parseFloat(config.max_cost_usd) || 0;
    if (cap && limit) {
      var percent = Math.min(100, Math.round((100 * usage.cost) / limit));
      cap.firstElementChild.style.width = percent + "%";
      cap.classList.toggle("warn", percent >= 75 && percent < 100);
      cap.classList.toggle("over", percent >= 100);
      cap.setAttribute("aria-valuenow", usage.cost.toFixed(4));
    }
  }

  function selectShot(button) {
    var viewport = document.getElementById("viewport");
    var img = document.getElementById("viewport-img");
    if (!img) {
      viewport.textContent = "";
      img = el("img");
      img.id = "viewport-img";
      img.alt = "Latest viewport screenshot";
      viewport.appendChild(img);
    }
    img.src = button.dataset.url;
    setText("viewport-caption", "#" + button.dataset.seq + " " + (button.dataset.page || ""));
    document.querySelectorAll("#filmstrip button").forEach(function (other) {
      other.setAttribute("aria-current", other === button ? "true" : "false");
    });
  }

  function addShot(event) {
    var strip = document.getElementById("filmstrip");
    var button = el("button");
    button.type = "button";
    button.dataset.seq = event.seq;
    button.dataset.url = event.data.screenshot_url;
    button.dataset.page = event.data.url || "";
    button.setAttribute("aria-label", "Screenshot at event " + event.seq);
    var thumb = el("img");
    thumb.src = event.data.screenshot_url;
    thumb.alt = "";
    button.appendChild(thumb);
    strip.appendChild(button);
    strip.scrollLeft = strip.scrollWidth;
    setText("shot-count", strip.children.length + " screenshot" + (strip.children.length === 1 ? "" : "s"));
    selectShot(button);
  }

  var summaryTimer = null;
  function refreshSummary() {
    window.clearTimeout(summaryTimer);
    summaryTimer = window.setTimeout(function () {
      fetch(config.summary_url, { credentials: "same-origin" })
        .then(function (response) {
          return response.ok ? response.text() : null;
        })
        .then(function (html) {
          if (!html) return;
          // Rendered and escaped by Django from the database, not from the socket's event data.
          var template = document.createElement("template");
          template.innerHTML = html.trim();
          var fresh = template.content.firstElementChild;
          document.getElementById("summary").replaceWith(fresh);
          bindTabs(fresh);
          syncHeader(fresh.dataset);
        });
    }, 150);
  }

  // The header from the freshly rendered summary: status, duration, judge pill, turns and usage, all from one read.
  function syncHeader(data) {
    setStatus(data.status);
    if (data.turns !== "") {
      turns = parseInt(data.turns, 10) || 0;
      showTurns();
    }
    usage.requests = parseInt(data.usageRequests, 10) || 0;
    usage.total = parseInt(data.usageTotal, 10) || 0;
    usage.output = parseInt(data.usageOutput, 10) || 0;
    usage.cache_read = parseInt(data.usageCache, 10) || 0;
    usage.cost = parseFloat(data.usageCost) || 0;
    showUsage();
    showJudge(data.judgeState);
    if (data.finished === "true") {
      finished = true;
      dismissNotices("finished");
      if (data.duration !== "") setText("run-duration", data.duration + "s");
      ["cancel-form", "sign-in-save-form"].forEach(function (id) {
        var form = document.getElementById(id);
        if (form) form.remove();
      });
      setText("live-state", "finished");
    }
  }

  // A notice that waits on something ("Cancel requested…", "A new judgment was requested…") goes once it happened.
  function dismissNotices(until) {
    document.querySelectorAll('.messages [data-until~="' + until + '"]').forEach(function (notice) {
      var list = notice.parentNode;
      notice.remove();
      if (!list.children.length) list.remove();
    });
  }
  if (config.finished) dismissNotices("finished");

  var JUDGE_PILLS = {
    judged: ["v-pass", "judged", "The judge has read this run"],
    judging: ["v-none", "judging…", "The judge is reading the finished run"],
    on: ["v-none", "judge on", "The judge reads the run after it finishes"],
    skipped: ["v-none", "not judged", "Cancelled runs are not judged"],
  };
  function showJudge(state) {
    var holder = document.getElementById("judge-pill");
    if (!holder) return;
    holder.textContent = "";
    var pill = JUDGE_PILLS[state];
    if (!pill) return;
    var node = badge(pill[0], pill[1]);
    node.title = pill[2];
    holder.appendChild(node);
  }

  // While the run runs, its duration counts up from started_at; the final figure comes from the server.
  var finished = config.finished;
  var durationNode = document.getElementById("run-duration");
  var startedAt = durationNode && durationNode.dataset.started ? Date.parse(durationNode.dataset.started) : NaN;
  window.setInterval(function () {
    if (finished || isNaN(startedAt)) return;
    durationNode.textContent = Math.max(0, Math.round((Date.now() - startedAt) / 1000)) + "s";
  }, 1000);

  function replySeparator(reply) {
    return timeline.querySelector('.turn-sep[data-turn="' + reply + '"]');
  }

  // Replies are numbered as the turn budget counts them: one whose browser action ran is an action turn.
  function labelReply(event) {
    var d = event.data || {};
    var sep = replySeparator(d.turn);
    if (!sep || replyActed[d.turn]) return;
    if (event.type === "agent.tool_use" && d.toolset === "browser") {
      replyActed[d.turn] = true;
      actionTurns += 1;
      sep.textContent = "Turn " + actionTurns;
      sep.dataset.action = String(actionTurns);
      if (actionTurns > turns) {
        turns = actionTurns;
        showTurns();
      }
    } else if (event.type === "agent.tool_use" && d.name === "done") {
      sep.textContent = "Verdict";
    }
  }

  // A browser action refused on the verdict turn was no action: that reply is the verdict, not a turn.
  function unlabelRefused(event) {
    var d = event.data || {};
    var text = resultText(d.content);
    var refused = REFUSED.some(function (prefix) {
      return text.indexOf(prefix) === 0;
    });
    if (!refused) return;
    var use = timeline.querySelector('.ev-tool_use[data-use-id="' + CSS.escape(String(d.tool_use_id || "")) + '"]');
    var reply = use ? use.dataset.reply : null;
    if (reply === null || !replyActed[reply]) return;
    var sep = replySeparator(reply);
    if (sep && sep.dataset.action === String(actionTurns)) {
      replyActed[reply] = false;
      actionTurns -= 1;
      sep.textContent = "Verdict";
      delete sep.dataset.action;
    }
  }

  function apply(event) {
    if (event.seq <= lastSeq || timeline.querySelector('[data-seq="' + event.seq + '"]')) return;
    lastSeq = event.seq;
    var d = event.data || {};
    var empty = document.getElementById("timeline-empty");
    if (empty) empty.remove();
    if (
      (event.type === "agent.message" || event.type === "agent.tool_use") &&
      d.turn !== undefined &&
      d.turn !== null &&
      d.turn !== currentTurn
    ) {
      currentTurn = d.turn;
      var sep = el("li", "turn-sep", "Reply");
      sep.dataset.turn = d.turn;
      timeline.appendChild(sep);
    }
    var node = render(event);
    if (event.type === "agent.tool_use") {
      node.dataset.useId = d.id || "";
      node.dataset.reply = d.turn;
    }
    timeline.appendChild(node);
    setText("event-count", lastSeq);
    if (event.type === "agent.tool_use") labelReply(event);
    if (event.type === "agent.tool_result") unlabelRefused(event);
    if ((event.type === "agent.tool_result" || event.type === "agent.final_view") && d.screenshot_url) addShot(event);
    if (event.type === "run.started") {
      setStatus("running");
      if (isNaN(startedAt)) startedAt = Date.parse(event.processed_at);
    }
    if (event.type === "run.judged") dismissNotices("judged");
    if (SUMMARY_TYPES[event.type]) refreshSummary();
    document.dispatchEvent(new CustomEvent("pilothouse:event", { detail: event }));
  }

  function setStatus(status) {
    var node = document.getElementById("run-status");
    node.className = "badge st-" + status;
    node.textContent = status;
  }

  function bindTabs(root) {
    root.querySelectorAll("[data-tabs]").forEach(function (tabs) {
      var buttons = tabs.querySelectorAll("[data-tab]");
      buttons.forEach(function (button) {
        var panel = document.getElementById(button.dataset.tab);
        if (panel && button.getAttribute("aria-selected") !== "true") panel.setAttribute("data-hidden", "");
        button.addEventListener("click", function () {
          buttons.forEach(function (other) {
            var selected = other === button;
            other.setAttribute("aria-selected", selected ? "true" : "false");
            var otherPanel = document.getElementById(other.dataset.tab);
            if (otherPanel) otherPanel.toggleAttribute("data-hidden", !selected);
          });
        });
      });
    });
  }

  document.getElementById("filmstrip").addEventListener("click", function (click) {
    var button = click.target.closest("button");
    if (button) selectShot(button);
  });
  timeline.addEventListener("click", function (click) {
    var link = click.target.closest("a.shot-ref");
    if (!link) return;
    var button = document.querySelector('#filmstrip button[data-seq="' + link.dataset.shot + '"]');
    if (button) {
      click.preventDefault();
      selectShot(button);
      document.getElementById("viewport").scrollIntoView({ block: "nearest" });
    }
  });
  bindTabs(document);

  // "More options…" carries the task typed in the quick box to the full form.
  // (Bound on the document: the follow-up card is re-rendered as the run goes on.)
  document.addEventListener("click", function (click) {
    var more = click.target.closest("#follow-more");
    if (!more) return;
    var task = document.getElementById("follow-task").value;
    var url = new URL(more.href, window.location.href);
    if (task.trim()) url.searchParams.set("task", task);
    else url.searchParams.delete("task");
    more.href = url.toString();
  });

  var live = new window.Pilothouse.LiveSocket({
    path: function () {
      return config.socket + "?after=" + lastSeq;
    },
    onMessage: function (message) {
      if (message.type === "event") apply(message.event);
    },
  });
  window.Pilothouse.runSocket = live;
})();
