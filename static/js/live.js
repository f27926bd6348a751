/* What the live pages share (loaded before their own scripts): a websocket that reconnects with backoff and tells the
   page when the connection is lost and when it is back, and the text of a tool result's content. */
(function () {
  "use strict";

  function banner(state, text) {
    if (this && this.options && this.options.quiet) return;
    var element = document.getElementById("connection-banner");
    if (!element) return;
    element.className = "banner " + state;
    element.textContent = text;
    element.hidden = !state;
  }

  /* options: path() -> websocket path (called on each connect, so it can carry the last seq),
     onMessage(message), onOpen(), onGone(code) for a close the server meant (not signed in, not found);
     quiet: true keeps a secondary socket (the live picture) from showing the connection banner. */
  function LiveSocket(options) {
    this.options = options;
    this.attempt = 0;
    this.socket = null;
    this.wasLost = false;
    this.stopped = false;
    this.connect();
  }

  LiveSocket.prototype.connect = function () {
    var self = this;
    var scheme = window.location.protocol === "https:" ? "wss://" : "ws://";
    var socket = new WebSocket(scheme + window.location.host + self.options.path());
    self.socket = socket;
    socket.addEventListener("open", function () {
      self.attempt = 0;
      if (self.wasLost) {
        self.wasLost = false;
        banner.call(self, "back", "Live updates are back.");
        window.setTimeout(function () {
          if (!self.wasLost) banner.call(self, "", "");
        }, 2500);
      }
      if (self.options.onOpen) self.options.onOpen();
    });
    socket.addEventListener("message", function (message) {
      var parsed;
      try {
        parsed = JSON.parse(message.data);
      } catch {
        return;
      }
      self.options.onMessage(parsed);
    });
    socket.addEventListener("close", function (event) {
      if (self.socket !== socket || self.stopped) return;
      // 4401: the sign-in expired; 4404: no such run here. Retrying would not change either.
      if (event.code === 4401 || event.code === 4404) {
        self.stopped = true;
        banner.call(
          self,
          "lost",
          event.code === 4401 ? "Signed out: reload the page to sign in again." : "This feed is not available.",
        );
        if (self.options.onGone) self.options.onGone(event.code);
        return;
      }
      self.wasLost = true;
      banner.call(self, "lost", "Connection lost. Reconnecting…");
      var delay = Math.min(15000, 500 * Math.pow(2, self.attempt)) * (0.75 + Math.random() * 0.5);
      self.attempt += 1;
      window.setTimeout(function () {
        if (!self.stopped) self.connect();
      }, delay);
    });
  };

  /* Close for good: no reconnect (the live picture stops when the run ends). */
  LiveSocket.prototype.stop = function () {
    this.stopped = true;
    if (this.socket) this.socket.close();
  };

  /* Drop the current connection as a network failure would (the page and the tests use it). */
  LiveSocket.prototype.drop = function () {
    if (this.socket) this.socket.close();
  };

  /* The text of a tool result's content (a string, or a list of text and image blocks): the JS twin of the server's
     helper, so a step drawn live reads as the same step rendered by the server. */
  function resultText(content) {
    if (typeof content === "string") return content;
    if (Array.isArray(content)) {
      return content
        .map(function (block) {
          if (block && block.type === "text") return String(block.text || "");
          if (block && block.type === "image") return "[image]";
          return JSON.stringify(block);
        })
        .join("\n");
    }
    return content === undefined || content === null ? "" : JSON.stringify(content);
  }

  /* A list of names (event types the server's registry gives a page) as an object to look them up in. */
  function asSet(names) {
    var set = {};
    (names || []).forEach(function (name) {
      set[name] = 1;
    });
    return set;
  }

  window.Pilothouse = window.Pilothouse || {};
  window.Pilothouse.asSet = asSet;
  window.Pilothouse.LiveSocket = LiveSocket;
  window.Pilothouse.banner = banner;
  window.Pilothouse.resultText = resultText;
})();
