"""The multi-host tests bring up a PostgreSQL cluster of their own, whatever database the session uses: `make test`
runs the suite twice at once (PostgreSQL and SQLite, scripts/parallel_suites.py), and one run of them is enough. They
are collected when DATABASE_URL is a PostgreSQL one (the run `make test` measures), and not collected otherwise, so
the SQLite run neither skips nor repeats them.

The hosts' fixtures (tests/support/hosts.py) are bound here, once for the package: its modules share one set of hosts,
started once and torn down after its last test."""

import os

from tests.support import hosts

collect_ignore_glob = (
    [] if os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://")) else ["*.py"]
)

network = hosts.network
messages_stub_host = hosts.messages_stub_host
hosts_stub = hosts.hosts_stub
pages_site = hosts.pages_site
services = hosts.services
web = hosts.web
worker_pool = hosts.worker_pool
worker_hosts = hosts.worker_hosts
