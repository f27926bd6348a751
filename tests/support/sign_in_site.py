"""A test site with a real sign-in: a password form whose POST sets a server session cookie (HttpOnly, so only the
browser's storage state carries it) and whose answer puts the user in local storage; /account says who is signed in,
from the server's session and from local storage. Each sign-in gets a fresh random token, so a test can hunt for it."""

import http.server
import secrets
import threading
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

PASSWORD = "correct-horse-battery"
COOKIE = "shop_session"

LOGIN = """<!doctype html><html><head><meta charset="utf-8"><title>Sign in</title></head><body>
<h1>Sign in</h1>
<form method="post" action="/login">
  <label>Username <input name="username" aria-label="Username"></label>
  <label>Password <input name="password" type="password" aria-label="Password"></label>
  <button type="submit">Sign in</button>
</form></body></html>"""

# The signed-in page is green all over, so a test can tell it from the form in a live picture.
SIGNED_IN_COLOUR = (0, 160, 80)
SIGNED_IN = """<!doctype html><html><head><meta charset="utf-8"><title>Welcome</title></head>
<body style="background: rgb(0, 160, 80)">
<p>Welcome, {user}. <a href="/account">Your account</a></p>
<script>localStorage.setItem("signed_in_as", {user_json});</script>
</body></html>"""

ACCOUNT = """<!doctype html><html><head><meta charset="utf-8"><title>Account</title></head><body>
<p id="server">{server}</p>
<p id="local"></p>
<script>document.getElementById("local").textContent =
  "local storage: " + (localStorage.getItem("signed_in_as") || "nobody");</script>
</body></html>"""


class SignInSite(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), SignInHandler)
        self.sessions: dict[str, str] = {}  # token -> user
        self.logins: list[str] = []  # the users who posted the form, in order
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def sign_in(self, user: str) -> str:
        token = secrets.token_hex(16)
        with self.lock:
            self.sessions[token] = user
            self.logins.append(user)
        return token

    def tokens_of(self, user: str) -> list[str]:
        with self.lock:
            return [token for token, owner in self.sessions.items() if owner == user]


class SignInHandler(http.server.BaseHTTPRequestHandler):
    server: SignInSite

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def answer(self, html: str, cookie: str | None = None) -> None:
        data = html.encode()
        self.send_response(200)
        self.send_header("content-type", "text/html; charset=utf-8")
        self.send_header("content-length", str(len(data)))
        if cookie is not None:
            self.send_header("set-cookie", f"{COOKIE}={cookie}; Path=/; HttpOnly; Max-Age=3600; SameSite=Lax")
        self.end_headers()
        self.wfile.write(data)

    def signed_in_user(self) -> str | None:
        for part in (self.headers.get("cookie") or "").split(";"):
            name, _, value = part.strip().partition("=")
            if name == COOKIE:
                with self.server.lock:
                    return self.server.sessions.get(value)
        return None

    def welcome(self, user: str) -> None:
        token = self.server.sign_in(user)
        self.answer(SIGNED_IN.format(user=user, user_json=repr(user)), cookie=token)

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        if parts.path == "/login":
            # ?as=NAME signs in on the spot: what a person does by hand in a sign-in session, done by the page
            user = parse_qs(parts.query).get("as", [""])[0]
            if user.isalnum():
                self.welcome(user)
            else:
                self.answer(LOGIN)
        elif parts.path == "/account":
            user = self.signed_in_user()
            self.answer(ACCOUNT.format(server=f"Signed in as {user}" if user else "Not signed in"))
        else:
            self.send_error(404)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length") or 0)).decode()
        form = {name: values[0] for name, values in parse_qs(body).items()}
        user = form.get("username", "")
        if form.get("password") == PASSWORD and user.isalnum():
            self.welcome(user)
        else:
            self.answer(LOGIN)


@pytest.fixture
def sign_in_site():
    """A fresh site per test: its sign-ins and tokens are the test's own."""
    server = SignInSite()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()
