"""A scripted Messages API for tests: named reply queues served over the real wire format (the fixtures are tests')."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from judge.prompts import GRADER_SYSTEM, JUDGE_SYSTEM

from .validation import Refusal
from .wire import Reply, WireError, WireServer

JUDGE_TOOL = "record_judgment"
GRADER_TOOL = "record_evaluation"
DONE_TOOL = "done"
# The judge and the grader are told who they are in their system prompt's first line; that is how they are routed.
JUDGE_SYSTEM_FIRST_LINE = JUDGE_SYSTEM.strip().splitlines()[0]
GRADER_SYSTEM_FIRST_LINE = GRADER_SYSTEM.strip().splitlines()[0]

AGENT_QUEUE = "agent"
JUDGE_QUEUE = "judge"
GRADER_QUEUE = "grader"

ScriptedReply = Reply | Callable[[dict[str, Any]], Reply]


def system_text(request: dict[str, Any]) -> str:
    system = request.get("system")
    if isinstance(system, str):
        return system
    return "\n".join(block.get("text", "") for block in system or [] if isinstance(block, dict))


def default_route(request: dict[str, Any]) -> str:
    """Judge and grader requests open with their own system prompt; everything else is the agent talking."""
    system = system_text(request).lstrip()
    if system.startswith(JUDGE_SYSTEM_FIRST_LINE):
        return JUDGE_QUEUE
    if system.startswith(GRADER_SYSTEM_FIRST_LINE):
        return GRADER_QUEUE
    return AGENT_QUEUE


class MessagesStub:
    """Answers each Messages request with the next scripted reply of the queue its route names.

    A scripted reply is a message dict (see `scripted_api.wire.text_reply` and friends), a WireError,
    or a callable that receives the request and returns either. Every request is recorded, in order.

    Requests the real API would refuse never reach a queue: the server answers them with the API's error
    (the broken rule's name first) and they land in `refusals`. The fixture fails the test at teardown for
    each refusal it did not announce with `expect_refusal(rule)`.
    """

    _shared: MessagesStub | None = None
    _shared_lock = threading.Lock()

    def __init__(self, route: Callable[[dict[str, Any]], str] = default_route, *, host: str = "127.0.0.1") -> None:
        """`host`: the address to listen on (a test whose workers are on other hosts gives one they reach)."""
        self.route = route
        self._lock = threading.Lock()
        self._queues: dict[str, deque[ScriptedReply]] = {}
        self._fallbacks: dict[str, ScriptedReply] = {}
        self._requests: list[tuple[str, dict[str, Any]]] = []
        self._expected_refusals: list[str] = []
        self.server = WireServer(self._respond, host=host)

    @classmethod
    def shared(cls) -> MessagesStub:
        """The session's one stub, started on first use, so a worker subprocess can learn its URL before it starts."""
        with cls._shared_lock:
            if cls._shared is None:
                cls._shared = cls().start()
            return cls._shared

    @property
    def base_url(self) -> str:
        return self.server.base_url

    def start(self) -> MessagesStub:
        self.server.start()
        return self

    def stop(self) -> None:
        self.server.stop()

    def __enter__(self) -> MessagesStub:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def reset(self) -> None:
        """Forget queues, fallbacks, recorded requests and the prompt cache: each test starts clean."""
        with self._lock:
            self._queues.clear()
            self._fallbacks.clear()
            self._requests.clear()
            self._expected_refusals.clear()
            self.route = default_route
        self.server.prompt_cache.clear()
        self.server.clear_refusals()

    @property
    def refusals(self) -> list[Refusal]:
        """Requests the stub refused since the last reset (each with its rule, message and request body)."""
        with self.server._received_lock:
            return list(self.server.refusals)

    def refused_rules(self) -> list[str]:
        return [refusal.rule for refusal in self.refusals]

    def expect_refusal(self, *rules: str) -> MessagesStub:
        """Announce that this test provokes a refusal for each of `rules` (once each), so teardown accepts it."""
        with self._lock:
            self._expected_refusals.extend(rules)
        return self

    def unexpected_refusals(self) -> list[Refusal]:
        """Refusals not announced by `expect_refusal`; each announcement excuses one refusal of its rule."""
        with self._lock:
            expected = list(self._expected_refusals)
        unexpected = []
        for refusal in self.refusals:
            if refusal.rule in expected:
                expected.remove(refusal.rule)
            else:
                unexpected.append(refusal)
        return unexpected

    def enqueue(self, *replies: ScriptedReply, queue: str = AGENT_QUEUE) -> MessagesStub:
        with self._lock:
            self._queues.setdefault(queue, deque()).extend(replies)
        return self

    def agent(self, *replies: ScriptedReply) -> MessagesStub:
        return self.enqueue(*replies, queue=AGENT_QUEUE)

    def judge(self, *replies: ScriptedReply) -> MessagesStub:
        return self.enqueue(*replies, queue=JUDGE_QUEUE)

    def grader(self, *replies: ScriptedReply) -> MessagesStub:
        return self.enqueue(*replies, queue=GRADER_QUEUE)

    def set_fallback(self, reply: ScriptedReply, queue: str = AGENT_QUEUE) -> MessagesStub:
        """A reply served whenever `queue` is empty, for tests that do not care how many requests come."""
        with self._lock:
            self._fallbacks[queue] = reply
        return self

    def remaining(self, queue: str = AGENT_QUEUE) -> int:
        with self._lock:
            return len(self._queues.get(queue, ()))

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Every request body received since the last reset, across all queues, in arrival order."""
        with self._lock:
            return [body for _, body in self._requests]

    def requests_for(self, queue: str) -> list[dict[str, Any]]:
        with self._lock:
            return [body for routed, body in self._requests if routed == queue]

    def _respond(self, request: dict[str, Any]) -> Reply:
        queue = self.route(request)
        with self._lock:
            self._requests.append((queue, request))
            pending = self._queues.get(queue)
            if pending:
                scripted = pending.popleft()
            elif queue in self._fallbacks:
                scripted = self._fallbacks[queue]
            else:
                # Not retryable (400): a run the test did not script for (one left over from an earlier test, say)
                # fails at once instead of retrying into the replies the next test scripts.
                return WireError(
                    400, "invalid_request_error", f"messages stub: no scripted reply left for queue {queue}"
                )
        # Callables run outside the lock: they may sleep to simulate a slow model.
        return scripted(request) if callable(scripted) else scripted
