"""Real Chromium in the test process: the executable and a browser host shared by one test module."""

import os
from collections.abc import Iterator

import pytest

from runs.agent.browser import BrowserHost

CHROMIUM = os.environ.get("BROWSER_EXECUTABLE", "/usr/bin/chromium")


@pytest.fixture(scope="module")
def host() -> Iterator[BrowserHost]:
    """One browser host for a test module (import it into the module: `from tests.support.browsers import host`)."""
    browser_host = BrowserHost(CHROMIUM)
    yield browser_host
    browser_host.close()
