"""A webhook receiver in the test, and the verification functions docs/webhooks.md gives its readers."""

import http.server
import re
import threading
import time

from tests.support.paths import REPO

DOC = REPO / "docs" / "webhooks.md"


def documented_function(name: str):
    """The function `name` of docs/webhooks.md, from the Python block that defines it, executed as a reader would
    paste that block."""
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    block = next(block for block in blocks if f"\ndef {name}(" in f"\n{block}")
    namespace: dict = {}
    exec(compile(block, str(DOC), "exec"), namespace)  # noqa: S102  (our own documentation's snippet)
    return namespace[name]


class Receiver:
    """A local HTTP endpoint that answers with the next scripted status and records every request."""

    def __init__(self, statuses: list[int]):
        self.statuses = list(statuses)
        self.requests: list[dict] = []
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.requests.append({"headers": self.headers, "body": body, "at": time.time()})
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}/hooks"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
