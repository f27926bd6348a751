"""Real Chromium in the test process: the executable, a browser host shared by one test module, a toolset on it and
one member call through the SDK pipeline."""

from collections.abc import Iterator
from typing import Any

import pytest
from anthropic.tools.browser import BetaToolsetCallContext
from django.conf import settings

from runtime.browser.host import BrowserHost
from runtime.browser.network_guard import NetworkGuard
from runtime.browser.toolset import PlaywrightBrowserToolset

CHROMIUM = settings.BROWSER_EXECUTABLE  # the runs' own Chromium (the headless shell when it is installed)


@pytest.fixture(scope="module")
def host() -> Iterator[BrowserHost]:
    """One browser host for a test module (import it into the module: `from tests.support.browsers import host`)."""
    browser_host = BrowserHost(CHROMIUM)
    yield browser_host
    browser_host.close()


LOCAL_ONLY = {"127.0.0.1"}


def make_toolset(host: BrowserHost, **kwargs: Any) -> PlaywrightBrowserToolset:
    storage_state = kwargs.pop("storage_state", None)
    kwargs.setdefault("network_guard", NetworkGuard(allowed_private_hosts=LOCAL_ONLY))

    async def build() -> PlaywrightBrowserToolset:
        # through the egress proxy, as the runtime opens it: every driver feature is tested behind the proxy too
        context = await host.new_context(storage_state, network_guard=kwargs["network_guard"])
        toolset = PlaywrightBrowserToolset(context=context, **kwargs)
        await toolset.install_guard()
        return toolset

    return host.run(build(), timeout=30)


def call(host: BrowserHost, toolset: PlaywrightBrowserToolset, name: str, **member_input: Any) -> list[dict[str, Any]]:
    """One member call through the SDK pipeline, as the runtime makes it; returns the tool_result content."""
    return host.run(toolset.call(BetaToolsetCallContext(), name, member_input), timeout=60)
