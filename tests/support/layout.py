"""What a page's layout hides from a person: `COVERED`, a script for `page.evaluate` that lists every shown control
(button, input, select, textarea, link) another element lies over, so a click at its centre would land elsewhere.
Nothing overflows when two fields overlap, so this is checked beside the overflow test's measure."""

# Each control is scrolled to the middle of the viewport (and of any container that scrolls) and the element at
# its centre must be the control or inside it: a label's text or an icon in a button is still the control. A link
# that wraps is measured on its first line, where its text is.
COVERED = """() => {
  const problems = [];
  const name = (el) => {
    const text = (el.innerText || el.value || el.getAttribute("aria-label") || "").trim().slice(0, 40);
    return `<${el.tagName.toLowerCase()}${el.id ? "#" + el.id : ""}> "${text}"`;
  };
  const controls = "button, input:not([type=hidden]), select, textarea, a[href]";
  for (const el of document.querySelectorAll(controls)) {
    const style = getComputedStyle(el);
    let box = el.getBoundingClientRect();
    if (box.width <= 1 || box.height <= 1 || style.visibility === "hidden") continue;  // not shown, or screen-reader only
    if (el.closest("[hidden], details:not([open]) > :not(summary)")) continue;
    // moved off the page on purpose until focused (a skip link)
    if (box.right + window.scrollX <= 0 || box.bottom + window.scrollY <= 0) continue;
    el.scrollIntoView({ block: "center", inline: "center" });
    box = el.getClientRects()[0];
    const hit = document.elementFromPoint(box.left + box.width / 2, box.top + box.height / 2);
    if (hit && (hit === el || el.contains(hit))) continue;
    problems.push(`${name(el)} is covered at its centre by ${hit ? name(hit) : "nothing on screen"}`);
  }
  window.scrollTo(0, 0);
  return problems;
}"""

# `IN_VIEW`, for `page.evaluate(IN_VIEW, selectors)`: each selector's shown elements that a person cannot see as the
# page opens, without scrolling anything sideways: past the viewport's sides, or past what a container that scrolls
# or clips shows of it. A page may fit (nothing overflows) and still hide its most telling column in a scroll box.
IN_VIEW = """(selectors) => {
  const problems = [];
  const name = (el) => `<${el.tagName.toLowerCase()}${el.id ? "#" + el.id : ""}${el.className && typeof el.className === "string" ? "." + el.className.trim().split(/\\s+/).join(".") : ""}> "${(el.textContent || "").trim().slice(0, 30)}"`;
  for (const selector of selectors) {
    const found = [...document.querySelectorAll(selector)].filter((el) => el.getClientRects().length);
    if (!found.length) problems.push(`nothing shown matches ${selector}`);
    for (const el of found) {
      const box = el.getBoundingClientRect();
      let left = 0, right = window.innerWidth;
      for (let up = el.parentElement; up && up !== document.body; up = up.parentElement) {
        if (!/(auto|scroll|hidden|clip)/.test(getComputedStyle(up).overflowX)) continue;
        const shown = up.getBoundingClientRect();
        left = Math.max(left, shown.left + up.clientLeft);
        right = Math.min(right, shown.left + up.clientLeft + up.clientWidth);
      }
      if (box.left < left - 1 || box.right > right + 1) {
        problems.push(`${name(el)} spans ${Math.round(box.left)}-${Math.round(box.right)}px, ` +
                      `shown ${Math.round(left)}-${Math.round(right)}px`);
      }
    }
  }
  return problems;
}"""
