"""docs/configuration.md is complete: every variable the settings read is documented, and every documented one is read.

The settings module is parsed, not imported, so a variable read behind a condition (only with PostgreSQL, only
without a key) counts as well. `make run`'s own variables are read by scripts/run.py, and the bucket's and the
tracer's by their libraries: those are documented in tables that say so."""

import ast
import re

from tests.support.paths import REPO

DOC = REPO / "docs" / "configuration.md"
# The modules that read the environment for the platform: the settings, `make run`'s supervisor, and the tracer's
# set-up (which names the service unless OTEL_SERVICE_NAME does).
READERS = [REPO / "agent_platform" / path for path in ("settings.py", "telemetry.py")] + [REPO / "scripts" / "run.py"]
# The settings' own helpers (envstr, envint...), os.environ.get / os.getenv, and a mapping's .get or [] on an
# environment copy (`env.get("PORT")`, `env["SCRIPTED_MODEL_PORT"]`).
READ_CALLS = {"envstr", "envbool", "envint", "envlist", "get", "getenv"}
VARIABLE = re.compile(r"^[A-Z][A-Z0-9_]+$")
LIBRARY_TABLE = "(read by the libraries)"


def variables_read(path):
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            function = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if function in READ_CALLS and isinstance(node.args[0].value, str):
                names.add(node.args[0].value)
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            base = node.value
            base_name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")
            if base_name in ("environ", "env") and isinstance(node.slice.value, str):
                names.add(node.slice.value)
    return {name for name in names if VARIABLE.match(name)}


def documented():
    """The variables in the first column of each table: (ours, the libraries')."""
    ours, libraries = set(), set()
    table = ours
    for line in DOC.read_text().splitlines():
        if line.startswith("| variable"):
            table = libraries if LIBRARY_TABLE in line else ours
        elif line.startswith("| `"):
            first_column = line.split("|")[1]
            table.update(re.findall(r"`([A-Z][A-Z0-9_]+)`", first_column))
    return ours, libraries


def test_every_variable_the_settings_read_is_documented():
    ours, libraries = documented()
    read = set().union(*(variables_read(path) for path in READERS))
    assert sorted(read - ours - libraries) == []


def test_every_documented_variable_of_ours_is_still_read():
    ours, _ = documented()
    read = set().union(*(variables_read(path) for path in READERS))
    assert sorted(ours - read) == []


def test_the_parser_finds_each_way_of_reading(tmp_path):
    module = tmp_path / "reader.py"
    module.write_text(
        'import os\nA = envint("ALPHA", 1)\nB = os.environ.get("BETA")\nC = env["GAMMA"]\n'
        'D = os.getenv("DELTA")\nE = {"ENGINE": "x"}["ENGINE"]\n'
    )
    assert variables_read(module) == {"ALPHA", "BETA", "GAMMA", "DELTA"}
