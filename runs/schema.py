"""The bounded output_schema subset: which schemas a run may ask for, and whether the agent's data satisfies one."""

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

SCHEMA_MAX_BYTES = 8 * 1024
DATA_MAX_BYTES = 64 * 1024
ALLOWED_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "description",
        "title",
        "minimum",
        "maximum",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "anyOf",
        "oneOf",
    }
)
SUPPORTED = ", ".join(sorted(ALLOWED_KEYWORDS))
# Keywords whose value is a schema, a list of schemas, or a map of names to schemas; the walk descends into these.
SUBSCHEMA = frozenset({"items", "additionalProperties"})
SUBSCHEMA_LISTS = frozenset({"anyOf", "oneOf"})
SUBSCHEMA_MAPS = frozenset({"properties"})


@dataclass(frozen=True)
class SchemaProblem:
    path: str
    keyword: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"

    def as_dict(self) -> dict[str, str]:
        """The problem as the API's error detail and the form's lint show it: {path, keyword, message}."""
        return {"path": self.path, "keyword": self.keyword, "message": self.message}


def serialized_size(value: object) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def _walk(schema: object, path: str, problems: list[SchemaProblem]) -> None:
    if isinstance(schema, bool):
        return  # true/false are valid schemas (e.g. additionalProperties: false)
    if not isinstance(schema, dict):
        problems.append(SchemaProblem(path, "", "a schema must be an object or a boolean"))
        return
    for keyword, value in schema.items():
        where = f"{path}.{keyword}"
        if keyword not in ALLOWED_KEYWORDS:
            problems.append(
                SchemaProblem(where, keyword, f"the keyword '{keyword}' is not supported; supported: {SUPPORTED}")
            )
            continue
        if keyword in SUBSCHEMA:
            _walk(value, where, problems)
        elif keyword in SUBSCHEMA_LISTS:
            if not isinstance(value, list) or not value:
                problems.append(SchemaProblem(where, keyword, f"'{keyword}' must be a non-empty list of schemas"))
                continue
            for index, item in enumerate(value):
                _walk(item, f"{where}[{index}]", problems)
        elif keyword in SUBSCHEMA_MAPS:
            if not isinstance(value, dict):
                problems.append(SchemaProblem(where, keyword, f"'{keyword}' must map property names to schemas"))
                continue
            for name, item in value.items():
                _walk(item, f"{where}.{name}", problems)


def schema_problems(schema: object) -> list[SchemaProblem]:
    """Why a schema cannot be a run's output_schema; an empty list means it can."""
    if not isinstance(schema, dict):
        return [SchemaProblem("$", "", "output_schema must be a JSON object")]
    size = serialized_size(schema)
    if size > SCHEMA_MAX_BYTES:
        return [SchemaProblem("$", "", f"output_schema is {size} bytes; the limit is {SCHEMA_MAX_BYTES} bytes")]
    problems: list[SchemaProblem] = []
    if schema.get("type") != "object":
        problems.append(SchemaProblem("$.type", "type", 'the root must be an object schema ("type": "object")'))
    _walk(schema, "$", problems)
    # Every problem at once: the metaschema's findings too, except where the subset check already named the place.
    reported = {problem.path for problem in problems}
    meta = Draft202012Validator(Draft202012Validator.META_SCHEMA)
    for error in sorted(meta.iter_errors(schema), key=lambda e: [str(p) for p in e.absolute_path]):
        where = _data_path(error.absolute_path)
        if any(where == seen or where.startswith((f"{seen}.", f"{seen}[")) for seen in reported):
            continue
        reported.add(where)
        keyword = str(error.absolute_path[-1]) if error.absolute_path else ""
        problems.append(SchemaProblem(where, keyword, f"not a valid JSON Schema: {best_match([error]).message}"))
    return problems


def _data_path(path: Iterable[str | int]) -> str:
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)


def data_problems(schema: dict[str, Any], data: object) -> list[str]:
    """Why `data` is not acceptable as the run's data under `schema`; an empty list means it is accepted."""
    size = serialized_size(data)
    if size > DATA_MAX_BYTES:
        return [f"at $: data is {size} bytes serialized; the limit is {DATA_MAX_BYTES} bytes"]
    validator = Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(data), key=lambda e: (list(e.absolute_path), e.message))
    return [f"at {_data_path(error.absolute_path)}: {error.message}" for error in errors[:20]]
