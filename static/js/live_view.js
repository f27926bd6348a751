/* The live picture of the agent's tab: while the run runs and this page is open, the worker streams a screencast
   over a socket of its own; the newest frame is shown (one decode at a time: frames that arrive meanwhile are
   skipped, never queued), with the agent's last action marked. It stops when the run ends. */
(function () {
  "use strict";
  var config = JSON.parse(document.getElementById("run-config").textContent);
  if (config.finished || !config.live_socket || !window.Pilothouse) return;
  var view = document.getElementById("live-view");
  var img = document.getElementById("live-img");
  var cursor = document.getElementById("live-cursor");
  var caption = document.getElementById("live-caption");
  var badge = document.getElementById("live-badge");
  var screenshots = document.getElementById("viewport");
  var decoding = false;
  var pending = null;
  var frames = 0;
  var frameSize = { width: 0, height: 0 };

  function show(on) {
    view.hidden = !on;
    caption.hidden = !on;
    badge.hidden = !on;
    screenshots.hidden = on;
    document.getElementById("viewport-caption").hidden = on;
  }

  function draw(frame) {
    if (decoding) {
      pending = frame; // only the newest waiting frame is kept
      return;
    }
    decoding = true;
    img.onload = img.onerror = function () {
      decoding = false;
      frames += 1;
      view.dataset.frames = String(frames);
      if (pending) {
        var next = pending;
        pending = null;
        draw(next);
      }
    };
    if (frame.width && frame.height) frameSize = { width: frame.width, height: frame.height };
    img.src = "data:image/jpeg;base64," + String(frame.jpeg).replace(/[^A-Za-z0-9+/=]/g, "");
    caption.textContent = frame.url || "";
    var point = frame.cursor;
    if (point && frame.width && frame.height && typeof point.x === "number" && typeof point.y === "number") {
      cursor.hidden = false;
      cursor.style.left = Math.max(0, Math.min(100, (100 * point.x) / frame.width)) + "%";
      cursor.style.top = Math.max(0, Math.min(100, (100 * point.y) / frame.height)) + "%";
      cursor.title = "Last action: " + String(point.action || "");
      cursor.dataset.action = String(point.action || "");
    } else {
      cursor.hidden = true;
    }
    show(true);
  }

  var socket = new window.Pilothouse.LiveSocket({
    quiet: true,
    path: function () {
      return config.live_socket;
    },
    onMessage: function (message) {
      if (message.type === "frame") draw(message);
      else {
        // The rest (the worker's answers to a person's input, the end) is for static/js/control.js too.
        document.dispatchEvent(new CustomEvent("pilothouse:live", { detail: message }));
        if (message.type === "ended") stop();
      }
    },
  });

  function stop() {
    socket.stop();
    show(false);
    view.dataset.ended = "true";
  }

  document.addEventListener("pilothouse:event", function (event) {
    if (event.detail && event.detail.type === "run.finished") stop();
  });
  /* A person's input while they have control (static/js/control.js): sent on this socket, applied by the worker. */
  function send(input) {
    var open = socket.socket && socket.socket.readyState === WebSocket.OPEN;
    if (open) socket.socket.send(JSON.stringify(Object.assign({ type: "input" }, input)));
    return open;
  }

  window.Pilothouse.liveView = {
    stop: stop,
    send: send,
    frameSize: function () {
      return frameSize;
    },
  };
})();
