"""A run's downloads: every file its browser downloads (a link, an attachment response, a blob) is kept through a
callback that stores it, within the run's limits of size and count; past them the download is cancelled, its bytes
deleted, and the agent told. What happened is reported as the SDK's download state changes and as notice lines."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from playwright.async_api import Download
from playwright.async_api import Error as PlaywrightError

log = logging.getLogger(__name__)

# How often the size of a download in flight is read, to cancel it as soon as it passes the limit.
WATCH_INTERVAL_SECONDS = 0.1
# How long a tool result waits for the downloads in flight to finish, so the call that started one reports it.
SETTLE_SECONDS = 10.0
# The longest a single download may take before it is given up.
DOWNLOAD_TIMEOUT_SECONDS = 300.0


@dataclass(frozen=True)
class Kept:
    """A stored download, as the keep callback returns it: the file's public fields."""

    file: dict[str, Any]


# (local path, the page's suggested name, the URL) -> the stored file's public fields. Called off the event loop.
KeepCallback = Callable[[str, str, str], dict[str, Any]]


class RunDownloads:
    """The downloads of one run's BrowserContext. `attach` each page; the toolset reads `take_changes` into its
    browser state, the loop reads `take_kept` (events) and `take_notes` (what the agent is told)."""

    def __init__(self, keep: KeepCallback, *, max_bytes: int, max_files: int) -> None:
        self.keep = keep
        self.max_bytes = max_bytes
        self.max_files = max_files
        self.started = 0  # downloads accepted so far (kept or in flight); what the count limit counts
        self._next_id = 1
        self._in_flight: set[asyncio.Future[None]] = set()
        self._changes: list[dict[str, Any]] = []
        self._kept: list[dict[str, Any]] = []
        self._notes: list[str] = []
        # Attachment responses to a navigation whose download event has not fired yet: a click on such a link returns
        # before Chromium turns the navigation into a download, and the call's result should still report it.
        self._announced = 0

    def attach(self, page: Any) -> None:
        page.on("download", self._on_download)

    def watch_responses(self, context: Any) -> None:
        context.on("response", self._on_response)

    def _on_response(self, response: Any) -> None:
        with contextlib.suppress(PlaywrightError):
            disposition = (response.headers.get("content-disposition") or "").lower()
            if disposition.startswith("attachment") and response.request.is_navigation_request():
                self._announced += 1

    def _on_download(self, download: Download) -> None:
        self._announced = max(0, self._announced - 1)
        download_id = f"download_{self._next_id}"
        self._next_id += 1
        name = download.suggested_filename
        if self.started >= self.max_files:
            self._refuse(
                download,
                download_id,
                f"The download of {name!r} was refused: this run may keep at most {self.max_files} files.",
            )
            return
        self.started += 1
        self._changes.append({"type": "download_started", "download_id": download_id, "url": download.url})
        task = asyncio.ensure_future(self._follow(download, download_id))
        self._in_flight.add(task)
        task.add_done_callback(self._in_flight.discard)

    def _refuse(self, download: Download, download_id: str, why: str) -> None:
        self._failed(download, download_id, why)
        task = asyncio.ensure_future(discard(download))
        self._in_flight.add(task)
        task.add_done_callback(self._in_flight.discard)

    async def _follow(self, download: Download, download_id: str) -> None:
        name = download.suggested_filename
        watcher = asyncio.ensure_future(self._watch_size(download))
        path: Any = None
        failure: str | None = None
        try:
            path = await asyncio.wait_for(download.path(), DOWNLOAD_TIMEOUT_SECONDS)
        except (PlaywrightError, TimeoutError) as error:
            failure = str(error).splitlines()[0] if str(error) else "it did not finish"
        finally:
            watcher.cancel()
        if watcher.done() and not watcher.cancelled() and watcher.result():
            self.started -= 1  # a refused download does not count against the number kept
            await discard(download)
            self._failed(download, download_id, self.too_large(name))
            return
        if path is None:
            self.started -= 1
            await discard(download)
            reason = await failure_of(download) or failure or "it did not finish"
            self._failed(download, download_id, f"The download of {name!r} failed: {reason}.")
            return
        size = os.path.getsize(path)
        if size > self.max_bytes:
            self.started -= 1
            await discard(download)
            self._failed(download, download_id, self.too_large(name))
            return
        try:
            stored = await asyncio.to_thread(self.keep, str(path), name, download.url)
        except Exception:
            log.warning("a download could not be stored", exc_info=True)
            self.started -= 1
            self._failed(download, download_id, f"The download of {name!r} could not be kept.")
            return
        finally:
            await discard(download)
        self._kept.append(stored)
        self._changes.append(
            {"type": "download_completed", "download_id": download_id, "url": download.url, "size_bytes": size}
        )
        self._notes.append(
            f"Downloaded {stored['name']!r} ({stored['size']} bytes, {stored['content_type']}): kept as {stored['id']}."
        )

    def too_large(self, name: str) -> str:
        return f"The download of {name!r} was refused: it is larger than this run's limit of {self.max_bytes} bytes."

    def _failed(self, download: Download, download_id: str, why: str) -> None:
        """The SDK's state change for the browser, and a note the agent reads (the result shows notes, not this
        change's error)."""
        self._changes.append({"type": "download_failed", "download_id": download_id, "url": download.url, "error": why})
        self._notes.append(why)

    async def _watch_size(self, download: Download) -> bool:
        """True once the bytes written so far pass the limit (the download is then cancelled); runs until cancelled.
        Chromium writes a download in flight to the artifact's path Playwright chose."""
        path = artifact_path(download)
        if path is None:
            return False
        while True:
            await asyncio.sleep(WATCH_INTERVAL_SECONDS)
            written = 0
            for candidate in (path, path + ".crdownload"):
                with contextlib.suppress(OSError):
                    written = max(written, os.path.getsize(candidate))
            if written > self.max_bytes:
                with contextlib.suppress(PlaywrightError):
                    await download.cancel()
                return True

    async def settle(self, timeout: float = SETTLE_SECONDS) -> None:
        """Wait (bounded) for the downloads announced and in flight, so a result reports what the call started."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self._announced and loop.time() < deadline:
            await asyncio.sleep(WATCH_INTERVAL_SECONDS)
        self._announced = 0  # one that never became a download (refused, failed) is not waited for again
        if self._in_flight:
            await asyncio.wait(set(self._in_flight), timeout=max(0.0, deadline - loop.time()))

    def take_changes(self) -> list[dict[str, Any]]:
        changes, self._changes = self._changes, []
        return changes

    def take_kept(self) -> list[dict[str, Any]]:
        kept, self._kept = self._kept, []
        return kept

    def take_notes(self) -> list[str]:
        notes, self._notes = self._notes, []
        return notes


def artifact_path(download: Download) -> str | None:
    """Where Chromium is writing the download: Playwright's artifact knows it from the start (a private attribute,
    read defensively; without it the size is checked once the download completes)."""
    artifact = getattr(download, "_artifact", None)
    initializer = getattr(artifact, "_initializer", None)
    if isinstance(initializer, dict) and isinstance(initializer.get("absolutePath"), str):
        return str(initializer["absolutePath"])
    return None


async def discard(download: Download) -> None:
    """Cancel the download if it is still running and delete its bytes (Playwright's copy)."""
    with contextlib.suppress(PlaywrightError):
        await download.cancel()
    with contextlib.suppress(PlaywrightError):
        await download.delete()


async def failure_of(download: Download) -> str | None:
    with contextlib.suppress(PlaywrightError):
        return await download.failure()
    return None
