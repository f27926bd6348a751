"""A run launched from a recipe: its steps replayed with role locators and no model request while every target is
found and every checkpoint holds, its data read by one extraction request; at the first step that fails, the agent
loop takes over from the page as it is (healing), with the steps that remained as a hint."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from agent_platform.lib.money import rounded_usd
from agent_platform.lib.request_size import size_of
from agent_platform.lib.text import first_line
from runs import spending
from runs.models import Run
from runs.recipes import steps as recipe_steps
from runs.recipes.models import Replay
from runs.recipes.services import text_hash
from runs.secrets import mask
from runtime.browser.host import BrowserHost

from . import extraction
from .browser_call import BrowserCrashed
from .calls import text_block
from .checkpoint import Resumption
from .loop import AgentLoop
from .verdict import Ending

log = logging.getLogger(__name__)

WHY_MAX_CHARS = 500


def healing_hint(done: int, failed: int, why: str, remaining: list[str]) -> str:
    """What the agent is told when it takes over a replay: how far the recipe got, why it stopped, and the steps
    that remained as they were done last time."""
    lines = "\n".join(f"{number}. {line}" for number, line in enumerate(remaining, start=failed))
    return (
        f"[recipe] A recipe recorded from an earlier run of this task replayed its first {done} "
        f"step{'s' if done != 1 else ''} without you, and step {failed} could not be done: {why}. The browser is on "
        "the page those steps left. These are the steps that remained, as they were done last time; they are a "
        "hint, not orders: the page may have changed since, so look at it first, then finish the task and call "
        f"done.\n{lines}"
    )


class ReplayLoop(AgentLoop):
    """The run of a Replay: the recipe version's steps first, the agent loop only if one of them fails."""

    def __init__(
        self,
        run: Run,
        host_factory: Callable[[], BrowserHost],
        replay: Replay,
        *,
        worker: str = "",
        continued: bool = False,
        resumption: Resumption | None = None,
    ) -> None:
        super().__init__(run, host_factory, worker=worker, continued=continued, resumption=resumption)
        self.replay = replay
        self.steps: list[dict[str, Any]] = list(replay.version.steps)
        self.parameters: dict[str, str] = dict(replay.parameters)

    def converse(self) -> Ending:
        """The steps, then the extraction or the agent. Continued on another worker (runs.handover), a replay that was
        healing goes on as the agent from its last checkpoint (the steps' checkpoints start with the healing); one
        lost while it replayed has none, and replays its steps again from the first."""
        if self.resumption is not None:
            return super().converse()
        for number, step in enumerate(self.steps, start=1):
            self.safe_point()
            why = self.replay_step(number, step)
            self.record.hand_off()  # the step is on the live timeline while the next one runs
            if why is not None:
                return self.heal(number, why)
        return self.finish_replay()

    def rendered(self, step: dict[str, Any]) -> dict[str, Any]:
        return {**step, "value": recipe_steps.render(step.get("value"), self.parameters)}

    def replay_step(self, number: int, step: dict[str, Any]) -> str | None:
        """One step through the toolset (runtime.browser.toolset.replay), then its checkpoint: the URL and the page's
        structure fingerprint it left, as the recipe recorded them. Returns why it failed, or None."""
        action = str(step.get("action"))
        value = recipe_steps.render(step.get("value"), self.parameters)
        try:
            why: str | None = self.browser.call(
                self.browser.toolset.replay(action, step.get("target"), value), doing=f"replay step {number} ({action})"
            )
        except BrowserCrashed:
            raise
        except Exception as error:  # the action itself failed (a ToolError, a Playwright timeout)
            why = f"its action failed: {first_line(error)}"
        left = self.browser.toolset.take_step() if why is None else None
        if left is not None:
            expected_url, expected = str(step.get("url") or ""), str(step.get("fingerprint") or "")
            if expected_url and left["url"] != expected_url:
                why = f"it left the page at {left['url']}, where the recipe was at {expected_url}"
            elif expected and left["fingerprint"] != expected:
                why = "the page it left is not laid out as it was when the recipe was made (its checkpoint failed)"
        url = self.browser.progress.url = self.browser.current_url()
        self.browser.stale = True
        event = {
            "step": number,
            "line": recipe_steps.line(self.rendered(step)),
            "done": why is None,
            # Its action ran (only its checkpoint may have failed): a version a healed run proposes keeps it, with the
            # page it left now as its checkpoint.
            "acted": left is not None,
            "url": url,
            "recipe_step": step if left is None else {**step, "url": left["url"], "fingerprint": left["fingerprint"]},
        }
        if why is not None:
            event["why"] = why
        self.record.event("recipe.step", mask(event, self.run.secrets))
        return why

    def heal(self, number: int, why: str) -> Ending:
        """Hand the run to the agent loop at step `number`: the task (already its first message), the steps that
        remained as a hint, the page as it is."""
        why = why[:WHY_MAX_CHARS]
        log.info("run %s: replay heals from step %d: %s", self.run.public_id, number, why)
        Replay.objects.filter(pk=self.replay.pk).update(
            replayed_steps=number - 1, healed_from_step=number, why_healed=why
        )
        self.record.event("recipe.healing", mask({"step": number, "why": why}, self.run.secrets))
        remaining = [recipe_steps.line(self.rendered(step)) for step in self.steps[number - 1 :]]
        hint = healing_hint(number - 1, number, why, remaining)
        self.state.messages[-1]["content"].append(text_block(mask(hint, self.run.secrets)))
        return super().converse()

    def finish_replay(self) -> Ending:
        """Every step replayed: the run's verdict is the recipe's, its data read from the last page by one extraction
        request (none when the page's text is the source run's, whose data then stands)."""
        Replay.objects.filter(pk=self.replay.pk).update(replayed_steps=len(self.steps))
        text, url = self.browser.call(extraction.page_text_and_url(self.browser.toolset), doing="give the page's text")
        text = mask(text, self.run.secrets)
        last = self.replay.version.last_done or {}
        summary = (
            f"Replayed all {len(self.steps)} steps of recipe {self.replay.recipe.public_id} "
            f"(version {self.replay.version.number}) without the agent"
        )
        if last.get("text_hash") and text_hash(text) == last["text_hash"]:
            return Ending.verdict(
                {"success": True, "output": str(last.get("output") or summary), "data": last.get("data")}
            )
        room = spending.headroom(self.run)
        if room.left is not None:
            tokens = size_of(text).tokens + extraction.PROMPT_OVERHEAD_TOKENS
            model = extraction.extraction_model(self.run)
            cost = spending.estimate(model, estimated_tokens=tokens, last=None, cache_kept=False)
            if not room.allows(cost):
                return Ending.failed(
                    Run.ErrorCode.COST_LIMIT,
                    f"The replay's extraction request (about {rounded_usd(cost)}) would cross {room.describe()}; it was not "
                    "sent.",
                )
        schema = self.schema
        query = f"The page is the result of this task: {self.run.task}\n" + (
            "Give the data the task asks for." if schema is not None else "Say briefly what the page shows of it."
        )
        answer = extraction.extract(
            self.run, {"query": query[: extraction.QUERY_MAX_CHARS], "schema": schema}, text, url
        )
        if answer.is_error:
            return self.heal(len(self.steps) + 1, f"its data could not be read from the last page: {answer.text}")
        if schema is None:
            return Ending.verdict({"success": True, "output": f"{summary}. {answer.text}", "data": None})
        try:
            data = json.loads(answer.text)
        except ValueError:  # an answer past extraction's size limit comes back cut
            return self.heal(len(self.steps) + 1, "its data read from the last page was too large to keep whole")
        return Ending.verdict({"success": True, "output": f"{summary}.", "data": data})
