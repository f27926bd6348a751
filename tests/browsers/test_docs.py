"""docs/browsers.md's Playwright snippet, run as a reader pastes it: only its base URL, key and the demo's address
changed."""

import re

import pytest

from tests.support import browser_sessions, demo, live
from tests.support.paths import REPO

asgi_server = live.asgi_server
browsers_worker = browser_sessions.browsers_worker
demo_base_url = demo.demo_base_url

pytestmark = [
    pytest.mark.worker,
    pytest.mark.browser,
    pytest.mark.usefixtures("browsers_worker", "transactional_db"),
]

DOC = REPO / "docs" / "browsers.md"


def test_the_documented_playwright_snippet_connects_and_reads_the_demo(asgi_server, acme_key, demo_base_url):
    script = re.search(r"```python\n(.*?)```", DOC.read_text(), re.S).group(1)
    script = re.sub(r'^BASE_URL = ".*"', f'BASE_URL = "{asgi_server}"', script, count=1, flags=re.M)
    script = re.sub(r'^API_KEY = ".*"', f'API_KEY = "{acme_key}"', script, count=1, flags=re.M)
    script = script.replace("http://127.0.0.1:8001/", demo_base_url)
    namespace: dict = {}
    exec(compile(script, str(DOC), "exec"), namespace)  # noqa: S102  (our own documentation's script)
    assert "Northwind" in namespace["title"]
    stopped = namespace["api"].get(f"/browsers/{namespace['session']['id']}").json()
    assert stopped["status"] in ("stopping", "stopped")
