"""The worker process's one listener for what people send to the pages it holds (a person's input, a viewer asking for
the current frame): one event loop in one thread, one channel on the channel layer joined to each registered group,
and every message handed to the handler registered for its group and type.

Channels' Redis layer lets one event loop at a time receive on a layer instance: a listener per run, each with an
event loop of its own, broke every run's but the first ("Two event loops are trying to receive() on one channel layer
at once!"). Senders name the group in the message (`group`), since a channel receives a group's messages without it.
Handlers run on the inbox's loop and must not block it: they queue work or hand it to another loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from channels.layers import DEFAULT_CHANNEL_LAYER, channel_layers

log = logging.getLogger(__name__)

T = TypeVar("T")
Handler = Callable[[dict[str, Any]], None]

SETUP_TIMEOUT_SECONDS = 10.0
RETRY_SECONDS = 1.0


class Inbox:
    """Started on first use in each process (a forked child starts its own); one receive loop whatever the number of
    runs. `register` returns once the group is joined, so nothing sent after it is missed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pid: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._layer: Any = None
        self._channel = ""
        self._handlers: dict[tuple[str, str], Handler] = {}

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._started()[0]

    def _started(self) -> tuple[asyncio.AbstractEventLoop, Any]:
        with self._lock:
            if self._pid != os.getpid():
                if DEFAULT_CHANNEL_LAYER not in channel_layers.configs:
                    raise RuntimeError("no channel layer: nobody can reach this worker's pages")
                # A layer of its own: whatever else in the process receives on the shared one, on its own loop
                # (async_to_sync in a test, say), never meets this receive.
                layer = channel_layers.make_backend(DEFAULT_CHANNEL_LAYER)
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="browser-inbox", daemon=True).start()
                self._channel = asyncio.run_coroutine_threadsafe(layer.new_channel(), loop).result(
                    SETUP_TIMEOUT_SECONDS
                )
                self._handlers = {}
                asyncio.run_coroutine_threadsafe(self._listen(layer, self._channel), loop)
                self._pid, self._loop, self._layer = os.getpid(), loop, layer
            assert self._loop is not None
            return self._loop, self._layer

    def call(self, coro: Coroutine[Any, Any, T], timeout: float = SETUP_TIMEOUT_SECONDS) -> T:
        """Run `coro` on the inbox's loop from another thread and return its result."""
        loop, _layer = self._started()
        return asyncio.run_coroutine_threadsafe(coro, loop).result(timeout)

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> concurrent.futures.Future[Any]:
        """Start `coro` on the inbox's loop without waiting for it."""
        loop, _layer = self._started()
        return asyncio.run_coroutine_threadsafe(coro, loop)

    def register(self, group: str, message_type: str, handler: Handler) -> None:
        """Hand every message of `message_type` sent to `group` to `handler` (on the inbox's loop)."""
        _loop, layer = self._started()

        async def join() -> None:
            joined = any(key[0] == group for key in self._handlers)
            self._handlers[(group, message_type)] = handler
            if not joined:
                await layer.group_add(group, self._channel)

        self.call(join())

    def unregister(self, group: str, message_type: str) -> None:
        _loop, layer = self._started()

        async def leave() -> None:
            self._handlers.pop((group, message_type), None)
            if not any(key[0] == group for key in self._handlers):
                await layer.group_discard(group, self._channel)

        self.call(leave())

    async def send(self, channel: str, message: dict[str, Any]) -> None:
        """Reply to one socket (its channel name), from the inbox's loop."""
        await self._layer.send(channel, message)

    async def _listen(self, layer: Any, channel: str) -> None:
        while True:
            try:
                message = await layer.receive(channel)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("browser inbox: receive failed; trying again", exc_info=True)
                await asyncio.sleep(RETRY_SECONDS)
                continue
            handler = self._handlers.get((str(message.get("group", "")), str(message.get("type", ""))))
            if handler is None:
                continue  # a group this process left, or a message it does not serve
            try:
                handler(message)
            except Exception:  # the message's content is never logged: it may be typed text
                log.warning("browser inbox: a %s message was not handled", message.get("type"), exc_info=True)


inbox = Inbox()
