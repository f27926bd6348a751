# Pilothouse: `make run` starts the whole platform with embedded defaults; `make test` runs every check.
# The first Python >= 3.11 that really runs (a pyenv shim for a version not selected exists but fails).
PYTHON ?= $(shell for p in python3.12 python3.11 python3; do $$p -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null && { command -v $$p; break; }; done)
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run test check-deploy check-js lint screenshots bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# The stamps make a second `make run` start at once; pyproject.toml changing reinstalls.
$(VENV)/.installed-run: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e . --group test
	touch $@ $(VENV)/.installed-run

# The JS linter and formatter, pinned by package-lock.json; the stamp makes a second `make test` skip `npm ci`.
node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

run: $(VENV)/.installed-run
	$(BIN)/python scripts/run.py

# Tests talk to real services: PostgreSQL and Redis on this machine unless DATABASE_URL / REDIS_URL say otherwise.
# Static checks first (fast), then the suite on PostgreSQL with coverage, then again on SQLite (`make run`'s default
# database), in a file under var/ so the worker subprocesses share it.
test: export DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/test
test: export REDIS_URL ?= redis://127.0.0.1:6379/9
test: $(VENV)/.installed-test node_modules/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/djhtml --check templates
	$(MAKE) --no-print-directory check-js
	$(BIN)/python manage.py makemigrations --check --dry-run
	$(MAKE) --no-print-directory check-deploy
	$(BIN)/python -m pytest --cov --cov-report=term $(PYTEST_ARGS)
	DATABASE_URL=sqlite:///$(CURDIR)/var/tests.sqlite3 $(BIN)/python -m pytest $(PYTEST_ARGS)

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

clean:
	rm -rf $(VENV) node_modules var/staticfiles .pytest_cache .ruff_cache .mypy_cache .coverage
