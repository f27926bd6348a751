"""Reads, before a run's browser closes, the page texts its suite task's program checks name (WebArena's
program_html: a locator on the final page or on a page of the site), for the rule scorer to compare on the web side.
The run's browser (runtime.run_browser) calls read_all with the checks its run's metadata carries."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page

from agent_platform.lib.text import first_line

if TYPE_CHECKING:
    from runtime.browser.toolset import PlaywrightBrowserToolset


log = logging.getLogger(__name__)

READ_TIMEOUT_MS = 5000
TEXT_MAX_CHARS = 4000
CHECKS_MAX = 10


async def locator_text(page: Page, locator: str) -> str | None:
    """The text a locator names: the page's whole text when empty, a JavaScript expression (WebArena's
    `document.querySelector(...).outerText`), else a CSS selector's first match."""
    text: str | None
    if not locator:
        text = await page.inner_text("body", timeout=READ_TIMEOUT_MS)
    elif locator.startswith("func:"):
        return None  # WebArena's Python helpers run against its own sites' databases: not a page read
    elif locator.lstrip().startswith(("document.", "window.", "[...", "(")):
        value = await page.evaluate(f"() => {{ try {{ return String({locator}); }} catch (e) {{ return null; }} }}")
        text = value if isinstance(value, str) else None
    else:
        found = page.locator(locator).first
        text = await found.inner_text(timeout=READ_TIMEOUT_MS) if await found.count() else None
    return None if text is None else text[:TEXT_MAX_CHARS]


async def read_all(toolset: PlaywrightBrowserToolset, checks: list[dict[str, Any]]) -> list[str | None]:
    """Each check's text: on the active tab for url "last", else on a page of its own opened in the run's context."""
    texts: list[str | None] = []
    for check in checks[:CHECKS_MAX]:
        url = str(check.get("url") or "last")
        page = toolset.active_page() if url == "last" else None
        opened = None
        try:
            if page is None:
                opened = page = await toolset.context.new_page()
                await page.goto(url, timeout=READ_TIMEOUT_MS * 2, wait_until="domcontentloaded")
            texts.append(await locator_text(page, str(check.get("locator") or "")))
        except PlaywrightError as error:
            log.info("a reference check's text could not be read at %s: %s", url, first_line(error))
            texts.append(None)
        finally:
            if opened is not None:
                await opened.close()
    return texts
