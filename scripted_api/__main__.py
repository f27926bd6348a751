"""`python -m scripted_api`: serve the scripted demo model (a stand-in for the Anthropic API when no
ANTHROPIC_API_KEY is set) on the Messages wire format until interrupted. `make run` starts it.

An entry point of its own rather than a management command of an app: the emulator is outside the platform, and the
demo model needs only the settings (the demo site's address), not the apps."""

import argparse
import os
import signal
import sys
import threading

from django.conf import settings

from .demo import scripted_model_server


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agent_platform.settings")
    parser = argparse.ArgumentParser(prog="python -m scripted_api", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1", help="Interface to bind; keep it local.")
    parser.add_argument("--port", type=int, default=8765, help="0 picks a free port.")
    parser.add_argument(
        "--demo-url",
        default=None,
        help="The demo site's address, where runs without a start URL go (default: the DEMO_BASE_URL setting).",
    )
    args = parser.parse_args(argv)
    stopping = threading.Event()
    # `make run` stops its children with SIGTERM; treat it like Ctrl-C so the socket is closed cleanly.
    signal.signal(signal.SIGTERM, lambda signum, frame: stopping.set())
    demo_url = args.demo_url or settings.DEMO_BASE_URL
    server = scripted_model_server(host=args.host, port=args.port, demo_base_url=demo_url).start()
    print(f"Scripted demo model on {server.base_url} (point ANTHROPIC_BASE_URL here). Ctrl-C stops.", flush=True)
    try:
        # A timed wait, so the main thread gets to run signal handlers.
        while not stopping.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        print("Scripted demo model stopped.", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
