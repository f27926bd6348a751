/* Small behaviours every page shares: forms that ask before a destructive submit (data-confirm) and copy buttons
   (data-copy="ID" copies that element's text). */
(function () {
  "use strict";
  document.addEventListener("submit", function (submit) {
    var form = submit.target;
    if (form.dataset && form.dataset.confirm && !window.confirm(form.dataset.confirm)) submit.preventDefault();
  });

  function copied(button, ok) {
    var label = button.textContent;
    button.textContent = ok ? "Copied" : "Select and copy";
    window.setTimeout(function () {
      button.textContent = label;
    }, 1600);
  }

  document.addEventListener("click", function (click) {
    var button = click.target.closest("[data-copy]");
    if (!button) return;
    var source = document.getElementById(button.dataset.copy);
    if (!source) return;
    var text = source.textContent.trim();
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(
        function () {
          copied(button, true);
        },
        function () {
          copied(button, false);
        },
      );
      return;
    }
    // Plain http on a non-local host has no clipboard API: select the text and use the legacy command.
    var range = document.createRange();
    range.selectNodeContents(source);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    var ok;
    try {
      ok = document.execCommand("copy");
    } catch {
      ok = false;
    }
    copied(button, ok);
  });
})();
