# Pilothouse: `make run` starts the whole platform with embedded defaults; `make test` runs every check.
PYTHON ?= $(shell command -v python3.12 || command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint screenshots bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e . --group test
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/python scripts/run.py

# Tests talk to real services: PostgreSQL and Redis on this machine unless DATABASE_URL / REDIS_URL say otherwise.
test: export DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/test
test: export REDIS_URL ?= redis://127.0.0.1:6379/9
test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python manage.py makemigrations --check --dry-run
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

clean:
	rm -rf $(VENV) var/staticfiles .pytest_cache .ruff_cache
