"""`make test-latest`: which installed versions differ from requirements-test.lock (the newest the ranges allow,
against what CI tests), one `name: locked -> installed` line each."""

import re
import sys
from importlib.metadata import distributions
from pathlib import Path

LOCK = Path(__file__).resolve().parent.parent / "requirements-test.lock"


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def main() -> int:
    locked = dict(re.findall(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)", LOCK.read_text(), re.MULTILINE))
    locked = {normalized(name): version for name, version in locked.items()}
    installed = {normalized(dist.metadata["Name"]): dist.version for dist in distributions()}
    drift = [
        f"  {name}: {locked.get(name, '(not locked)')} -> {version}"
        for name, version in sorted(installed.items())
        if name in locked and locked[name] != version
    ]
    print("versions that differ from requirements-test.lock:" if drift else "every locked package is at its newest")
    print("\n".join(drift))
    return 0


if __name__ == "__main__":
    sys.exit(main())
