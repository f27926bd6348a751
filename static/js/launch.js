/* The launch form (and the batch form's schema field): lint the output schema as it is typed (the same rules as runs/schema.py, then the server's
   own check for the last word), warn of a session conflict, and keep Launch disabled while the schema is refused. */
(function () {
  "use strict";
  var config = JSON.parse(document.getElementById("launch-config").textContent);
  var form = document.getElementById("launch-form");
  var textarea = document.getElementById("id_output_schema");
  var lint = document.getElementById("schema-lint");
  var conflictBox = document.getElementById("schema-conflict");
  var submit = document.getElementById("launch-submit");
  var hint = document.getElementById("submit-hint");
  var sizeLabel = document.getElementById("schema-size");
  var csrf = form.querySelector("input[name=csrfmiddlewaretoken]").value;
  var allowed = {};
  config.allowed.forEach(function (keyword) {
    allowed[keyword] = true;
  });
  var SUBSCHEMA = { items: 1, additionalProperties: 1 };
  var SUBSCHEMA_LISTS = { anyOf: 1, oneOf: 1 };
  var state = { local: [], server: null, conflict: null, text: null };
  var serverTimer = null;
  var serverRequest = 0;

  function isObject(value) {
    return value !== null && typeof value === "object" && !Array.isArray(value);
  }

  function byteLength(text) {
    return new TextEncoder().encode(text).length;
  }

  function walk(schema, path, problems) {
    if (typeof schema === "boolean") return;
    if (!isObject(schema)) {
      problems.push({ path: path, keyword: "", message: "a schema must be an object or a boolean" });
      return;
    }
    Object.keys(schema).forEach(function (keyword) {
      var value = schema[keyword];
      var where = path + "." + keyword;
      if (!allowed[keyword]) {
        problems.push({
          path: where,
          keyword: keyword,
          message: "the keyword '" + keyword + "' is not supported; supported: " + config.allowed.join(", "),
        });
        return;
      }
      if (SUBSCHEMA[keyword]) {
        walk(value, where, problems);
      } else if (SUBSCHEMA_LISTS[keyword]) {
        if (!Array.isArray(value) || !value.length) {
          problems.push({
            path: where,
            keyword: keyword,
            message: "'" + keyword + "' must be a non-empty list of schemas",
          });
          return;
        }
        value.forEach(function (item, index) {
          walk(item, where + "[" + index + "]", problems);
        });
      } else if (keyword === "properties") {
        if (!isObject(value)) {
          problems.push({ path: where, keyword: keyword, message: "'properties' must map property names to schemas" });
          return;
        }
        Object.keys(value).forEach(function (name) {
          walk(value[name], where + "." + name, problems);
        });
      }
    });
  }

  /* The local mirror of schema_problems: instant feedback; the server's answer follows and wins. */
  function localProblems(schema) {
    if (!isObject(schema)) return [{ path: "$", keyword: "", message: "output_schema must be a JSON object" }];
    var size = byteLength(JSON.stringify(schema));
    if (size > config.max_bytes) {
      return [
        {
          path: "$",
          keyword: "",
          message: "output_schema is " + size + " bytes; the limit is " + config.max_bytes + " bytes",
        },
      ];
    }
    var problems = [];
    if (schema.type !== "object") {
      problems.push({
        path: "$.type",
        keyword: "type",
        message: 'the root must be an object schema ("type": "object")',
      });
    }
    walk(schema, "$", problems);
    return problems;
  }

  function canonical(value) {
    if (Array.isArray(value)) return "[" + value.map(canonical).join(",") + "]";
    if (isObject(value)) {
      return (
        "{" +
        Object.keys(value)
          .sort()
          .map(function (key) {
            return JSON.stringify(key) + ":" + canonical(value[key]);
          })
          .join(",") +
        "}"
      );
    }
    return JSON.stringify(value);
  }

  function show() {
    var problems = state.server ? state.server : state.local;
    var conflict = state.server ? state.conflict : state.localConflict;
    lint.textContent = "";
    if (state.text) {
      if (problems.length) {
        var title = document.createElement("span");
        title.className = "problem";
        title.textContent =
          problems.length === 1
            ? "1 problem — this schema would be refused:"
            : problems.length + " problems — this schema would be refused:";
        lint.appendChild(title);
        var list = document.createElement("ul");
        problems.forEach(function (problem) {
          var item = document.createElement("li");
          item.className = "problem";
          var path = document.createElement("code");
          path.textContent = problem.path;
          item.appendChild(path);
          item.appendChild(document.createTextNode(" " + problem.message));
          list.appendChild(item);
        });
        lint.appendChild(list);
      } else {
        var ok = document.createElement("span");
        ok.className = "ok";
        ok.textContent = state.server
          ? "✓ Schema accepted by the server's rules."
          : "✓ Looks valid; checking with the server…";
        lint.appendChild(ok);
      }
    }
    conflictBox.hidden = !conflict;
    conflictBox.textContent = conflict || "";
    var blocked = problems.length > 0 || Boolean(conflict);
    submit.disabled = blocked;
    hint.textContent = blocked ? "Fix the output schema to launch; nothing has been spent." : "";
  }

  function askServer(text) {
    window.clearTimeout(serverTimer);
    serverTimer = window.setTimeout(function () {
      var mine = ++serverRequest;
      fetch(config.lint_url, {
        method: "POST",
        credentials: "same-origin",
        headers: { "X-CSRFToken": csrf, "Content-Type": "application/json" },
        body: text,
      })
        .then(function (response) {
          return response.json();
        })
        .then(function (answer) {
          if (mine !== serverRequest || textarea.value.trim() !== text) return;
          state.server = answer.problems || [];
          state.conflict = answer.conflict;
          show();
        })
        .catch(function () {});
    }, 300);
  }

  function check() {
    var text = textarea.value.trim();
    state.text = text;
    state.server = null;
    state.conflict = null;
    state.localConflict = null;
    sizeLabel.textContent = text ? byteLength(text) + " / " + config.max_bytes + " bytes" : "";
    if (!text) {
      state.local = [];
      window.clearTimeout(serverTimer);
      serverRequest++;
      show();
      return;
    }
    var schema;
    try {
      schema = JSON.parse(text);
    } catch (error) {
      state.local = [{ path: "$", keyword: "", message: "not valid JSON: " + error.message }];
      serverRequest++;
      show();
      return;
    }
    state.local = localProblems(schema);
    if (!state.local.length && config.in_session && !config.session_schema) {
      state.localConflict =
        "This session has no output schema and a follow-up cannot add one; this launch would be refused as a conflict. Clear the schema, or start a new session.";
    } else if (!state.local.length && config.session_schema && canonical(config.session_schema) !== canonical(schema)) {
      state.localConflict =
        "This session already has a different output schema; this launch would be refused as a conflict. Clear the schema to inherit the session's, or start a new session.";
    }
    show();
    askServer(text);
  }

  function toggle(checkboxId, panelId) {
    var box = document.getElementById(checkboxId);
    var panel = document.getElementById(panelId);
    if (!box || !panel) return; // the batch form shares the schema lint, not these panels
    function sync() {
      panel.toggleAttribute("data-hidden", !box.checked);
    }
    box.addEventListener("change", sync);
    sync();
  }

  toggle("id_judge", "judge-context");
  toggle("id_outcome_enabled", "outcome-fields");
  textarea.addEventListener("input", check);
  document.querySelectorAll("[data-preset]").forEach(function (button) {
    button.addEventListener("click", function () {
      var preset = config.presets[parseInt(button.dataset.preset, 10)];
      document.getElementById("id_task").value = preset.task;
      document.getElementById("id_start_url").value = preset.start_url;
      textarea.value = preset.output_schema;
      document.getElementById("id_secrets").value = preset.secrets || "";
      var profile = document.getElementById("id_profile_id");
      if (profile) profile.value = preset.profile_id || "";
      var judge = document.getElementById("id_judge");
      judge.checked = Boolean(preset.judge);
      judge.dispatchEvent(new Event("change"));
      document.querySelectorAll("#judge-context input").forEach(function (input, index) {
        input.value = (preset.judge_context || [])[index] || "";
      });
      var outcome = document.getElementById("id_outcome_enabled");
      outcome.checked = Boolean(preset.outcome);
      outcome.dispatchEvent(new Event("change"));
      if (preset.outcome) {
        document.getElementById("id_outcome_description").value = preset.outcome.description;
        document.getElementById("id_outcome_rubric").value = preset.outcome.rubric;
        document.getElementById("id_outcome_max_iterations").value = preset.outcome.max_iterations;
      }
      check();
      document.getElementById("id_task").focus();
    });
  });
  form.addEventListener("submit", function (event) {
    if (submit.disabled) event.preventDefault();
  });

  // Offer only the effort levels and thinking modes the chosen model has (from the Models API, via the page).
  var modelSelect = document.getElementById("id_model");
  function fitModelOptions() {
    var chosen = (config.models || []).filter(function (model) {
      return model.id === modelSelect.value;
    })[0];
    [
      ["id_effort", "efforts"],
      ["id_thinking", "thinking"],
    ].forEach(function (pair) {
      var select = document.getElementById(pair[0]);
      if (!select) return;
      Array.prototype.forEach.call(select.options, function (option) {
        var offered = !option.value || !chosen || chosen[pair[1]].indexOf(option.value) >= 0;
        option.disabled = !offered;
        option.hidden = !offered;
        if (!offered && option.selected) select.value = "";
      });
    });
  }
  if (modelSelect && modelSelect.tagName === "SELECT") {
    modelSelect.addEventListener("change", fitModelOptions);
    fitModelOptions();
  }
  check();
})();
