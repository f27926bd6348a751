"""A v4 secret binding's allowedDomains, enforced by the worker's browser: its value is typed on those hosts only."""

import re
from collections.abc import Iterator

import pytest
from anthropic.lib.tools import ToolError

from runtime.browser.host import BrowserHost
from runtime.browser.toolset import PlaywrightBrowserToolset
from tests.support import browsers
from tests.support.browsers import call, make_toolset

host = browsers.host  # the module's browser host (a fixture)

pytestmark = pytest.mark.browser


@pytest.fixture
def toolset(host: BrowserHost) -> Iterator[PlaywrightBrowserToolset]:
    bound = make_toolset(
        host,
        secrets={"PW": "hunter22", "PIN": "9876"},
        secret_domains={"PW": ["shop.example.com"], "PIN": ["127.0.0.1"]},
    )
    yield bound
    host.run(bound.close(), timeout=30)


def text_of(content: list[dict]) -> str:
    return "\n".join(block.get("text", "") for block in content if block["type"] == "text")


def test_a_secret_is_typed_on_its_allowed_host_and_refused_elsewhere(host, toolset, site):
    call(host, toolset, "navigate", url=f"{site}/index.html")
    snapshot = text_of(call(host, toolset, "read_page"))
    name = re.search(r'textbox "Full name"[^\n]*\[ref=(\w+)\]', snapshot).group(1)
    call(host, toolset, "left_click", target={"type": "ref", "ref": name})

    with pytest.raises(ToolError, match=r"only on shop\.example\.com .*this page is on 127\.0\.0\.1"):
        call(host, toolset, "type", text="{{secret:PW}}")
    with pytest.raises(ToolError, match=r"only on shop\.example\.com"):
        call(host, toolset, "form_input", target={"type": "ref", "ref": name}, value="{{secret:PW}}")
    call(host, toolset, "type", text="{{secret:PIN}}")

    page = toolset.context.pages[0]
    typed = host.run(page.locator("input").first.input_value(), timeout=10)
    assert typed == "9876" and "hunter22" not in typed
