"""The fleet tests bring up a PostgreSQL cluster of their own (connection limits are PostgreSQL's), so, like the
multi-host tests, they are collected when DATABASE_URL is a PostgreSQL one and not collected otherwise: the SQLite run
neither skips nor repeats them."""

import os

collect_ignore_glob = (
    [] if os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://")) else ["*.py"]
)
