"""What changed between two runs' data: the paths added, removed and changed (JSON Pointer-like, "/items/0/price")."""

from typing import Any


def json_diff(before: Any, after: Any) -> dict[str, list[Any]]:
    added: list[dict[str, Any]] = []
    removed: list[dict[str, Any]] = []
    changed: list[dict[str, Any]] = []

    def walk(path: str, old: Any, new: Any) -> None:
        if isinstance(old, dict) and isinstance(new, dict):
            for key in old.keys() | new.keys():
                child = f"{path}/{escape(str(key))}"
                if key not in new:
                    removed.append({"path": child, "before": old[key]})
                elif key not in old:
                    added.append({"path": child, "after": new[key]})
                else:
                    walk(child, old[key], new[key])
        elif isinstance(old, list) and isinstance(new, list):
            for index in range(max(len(old), len(new))):
                child = f"{path}/{index}"
                if index >= len(new):
                    removed.append({"path": child, "before": old[index]})
                elif index >= len(old):
                    added.append({"path": child, "after": new[index]})
                else:
                    walk(child, old[index], new[index])
        elif type(old) is not type(new) or old != new:
            changed.append({"path": path or "/", "before": old, "after": new})

    walk("", before, after)
    return {
        "added": sorted(added, key=lambda item: item["path"]),
        "removed": sorted(removed, key=lambda item: item["path"]),
        "changed": sorted(changed, key=lambda item: item["path"]),
    }


def escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def is_empty(diff: dict[str, list[Any]]) -> bool:
    return not any(diff.values())
