"""The multi-host tests bring up a PostgreSQL cluster of their own, whatever database the session uses: `make test`
runs the suite twice at once (PostgreSQL and SQLite, scripts/parallel_suites.py), and one run of them is enough. They
are collected when DATABASE_URL is a PostgreSQL one (the run `make test` measures), and not collected otherwise, so
the SQLite run neither skips nor repeats them."""

import os

collect_ignore_glob = (
    [] if os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://")) else ["*.py"]
)
