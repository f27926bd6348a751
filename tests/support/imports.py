"""The product's imports as its source states them: every import statement of every product module (at module level,
inside functions and under TYPE_CHECKING alike), read with `ast`, without loading anything."""

import ast
from pathlib import Path

from tests.support.paths import REPO

NOT_PRODUCT = {"tests", "bench", "node_modules"}


def product_modules() -> dict[str, Path]:
    modules = {}
    for init in REPO.glob("*/__init__.py"):
        if init.parent.name in NOT_PRODUCT:
            continue
        for path in init.parent.rglob("*.py"):
            if "migrations" in path.parts:
                continue
            parts = path.relative_to(REPO).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            modules[name] = path
    return modules


def imported(name: str, path: Path, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The dotted names an import statement of module `name` may load (a package, or a module of it)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join([*package, base] if base else package)
    return [base] + [f"{base}.{alias.name}" for alias in node.names]


def import_graph() -> dict[str, set[str]]:
    """Each product module's imports of other product modules. Its own packages are left out: loading a module loads
    the packages above it first, which is no circle."""
    modules = product_modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        ancestors = {".".join(name.split(".")[:depth]) for depth in range(1, name.count(".") + 1)}
        targets = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import | ast.ImportFrom):
                for target in imported(name, path, node):
                    while target and target not in modules:
                        target = target.rpartition(".")[0]
                    if target and target != name and target not in ancestors:
                        targets.add(target)
        graph[name] = targets
    return graph


def imported_names(name: str, path: Path) -> set[tuple[str, str]]:
    """What module `name` imports, as (module, name) pairs: `from runs import api` is ("runs", "api"),
    `from runs.api import get_run` ("runs.api", "get_run"), `import runs.api` ("runs.api", ""). Relative imports are
    resolved against the module's package."""
    found: set[tuple[str, str]] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update((alias.name, "") for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = imported(name, path, node)[0]
            found.update((base, alias.name) for alias in node.names)
    return found
