"""A recording test site: the test pages over HTTP plus pages only the fault and security tests need, every request
it answers kept so a test can prove what reached it."""

import http.server
import socket
import threading
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.support.canaries import HOSTILE
from tests.support.paths import PAGES

# Pages only these tests need, served beside the shared test pages.
EXTRA_PAGES = {
    "/login.html": """<!doctype html><html><head><meta charset="utf-8"><title>Sign in</title></head><body>
<h1>Sign in</h1>
<form method="post" action="/login">
  <label>User <input name="username" aria-label="Username"></label>
  <label>Password <input name="password" type="text" aria-label="Password" autofocus></label>
  <button type="submit">Sign in</button>
</form></body></html>""",
    "/hostile.html": f"""<!doctype html><html><head><meta charset="utf-8"><title>{HOSTILE}</title></head><body>
<p id="text">Product: &lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;</p>
</body></html>""",
}


class RecordingSite(http.server.ThreadingHTTPServer):
    """The test pages over HTTP, recording every request (path, body) so a test can prove what reached it."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int]) -> None:
        super().__init__(address, SiteHandler)
        self.requests: list[tuple[str, str, str, str]] = []
        self.lock = threading.Lock()

    def record(self, method: str, host: str, path: str, body: str) -> None:
        with self.lock:
            self.requests.append((method, host, path, body))

    def seen(self) -> list[tuple[str, str, str, str]]:
        """(method, Host header, path, body) of every request so far."""
        with self.lock:
            return list(self.requests)


class SiteHandler(http.server.SimpleHTTPRequestHandler):
    server: RecordingSite

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, directory=str(PAGES), **kwargs)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def send_text(self, html: str) -> None:
        data = html.encode()
        self.send_response(200)
        self.send_header("content-type", "text/html; charset=utf-8")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        self.server.record("GET", self.headers.get("host", ""), self.path, "")
        if path in EXTRA_PAGES:
            self.send_text(EXTRA_PAGES[path])
            return
        super().do_GET()

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length") or 0)).decode()
        self.server.record("POST", self.headers.get("host", ""), self.path, body)
        form = {name: values[0] for name, values in parse_qs(body).items()}
        # The page echoes what it received, as many real sites do: the masking must catch it on the way back.
        self.send_text(
            "<!doctype html><html><head><title>Signed in</title></head><body>"
            f"<p>Welcome {form.get('username', '')}; your password is {form.get('password', '')}.</p></body></html>"
        )


_shared: dict[str, Any] = {}


@pytest.fixture(scope="session")
def fault_site() -> RecordingSite:
    """One recording site on 127.0.0.1 for the session; its URL for the worker is `site_url(site)` (localhost)."""
    if "site" not in _shared:
        server = RecordingSite(("127.0.0.1", 0))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        _shared["site"] = server
    return _shared["site"]


def site_url(site: RecordingSite, host: str = "localhost") -> str:
    return f"http://{host}:{site.server_address[1]}"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
