"""`make bench` runs every script of bench/: a file there is either in the target or a module a script imports."""

import re

from tests.support.paths import REPO

BENCH = REPO / "bench"


def bench_recipe() -> list[str]:
    makefile = (REPO / "Makefile").read_text()
    recipe = re.search(r"^bench: \$\(VENV\).*?\n((?:\t.*\n)+)", makefile, re.MULTILINE)
    assert recipe, "the Makefile has a bench target"
    return re.findall(r"bench/(\w+)\.py", recipe.group(1))


def test_make_bench_runs_every_script_and_only_scripts_that_exist():
    run = bench_recipe()
    files = sorted(path.stem for path in BENCH.glob("*.py"))
    assert set(run) <= set(files)
    sources = {name: (BENCH / f"{name}.py").read_text() for name in run}
    imported = {name for name in files if any(re.search(rf"^from {name} import", s, re.M) for s in sources.values())}
    left_out = [name for name in files if name not in run and name not in imported and not name.startswith("_")]
    assert left_out == []
    assert {"context_memory", "long_run_tokens"} <= set(run)
