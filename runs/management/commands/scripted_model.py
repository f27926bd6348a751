"""`manage.py scripted_model`: serve the scripted demo model on the Messages wire format until interrupted."""

import signal
import threading
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from scripted_api.demo import scripted_model_server


class Command(BaseCommand):
    help = "Serve the scripted demo model (a stand-in for the Anthropic API when no ANTHROPIC_API_KEY is set)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1", help="Interface to bind; keep it local.")
        parser.add_argument("--port", type=int, default=8765, help="0 picks a free port.")
        parser.add_argument(
            "--demo-url",
            default=settings.DEMO_BASE_URL,
            help="The demo site's address, where runs without a start URL go (default: DEMO_BASE_URL).",
        )

    def handle(self, *args: Any, host: str, port: int, demo_url: str, **options: Any) -> None:
        stopping = threading.Event()
        # `make run` stops its children with SIGTERM; treat it like Ctrl-C so the socket is closed cleanly.
        signal.signal(signal.SIGTERM, lambda signum, frame: stopping.set())
        server = scripted_model_server(host=host, port=port, demo_base_url=demo_url).start()
        self.stdout.write(f"Scripted demo model on {server.base_url} (point ANTHROPIC_BASE_URL here). Ctrl-C stops.")
        self.stdout.flush()
        try:
            # A timed wait, so the main thread gets to run signal handlers.
            while not stopping.wait(0.5):
                pass
        except KeyboardInterrupt:
            pass
        finally:
            server.stop()
            self.stdout.write("Scripted demo model stopped.")
