"""The reference of the instance formats, written from the JSON Schema: one section per
object of the schema, one row per field (its type, whether it is required, its default
and its description). The documentation site's page *Instance formats* is built from it,
so the reference cannot drift from the schema the loader validates against.
"""

from __future__ import annotations

import json
from typing import Any

from planner.io.schema import instance_schema
from planner.model import MAX_INT

_FORMS = ("Problem", "ClusterInstance")
"""The two forms of a file, first in the reference."""


def schema_reference(schema: dict[str, Any] | None = None) -> str:
    """Markdown of every object of ``schema`` (default: :func:`instance_schema`), the two
    forms of a file first, then the others by name; each a heading, its description and a
    table of its fields."""
    schema = schema or instance_schema()
    defs: dict[str, Any] = schema["$defs"]
    names = [*_FORMS, *sorted(n for n in defs if n not in _FORMS)]
    parts = []
    for name in names:
        body = defs[name]
        parts.append(f"### {name}\n")
        if body.get("description"):
            parts.append(_text(body["description"]) + "\n")
        required = set(body.get("required", ()))
        rows = ["| field | type | required | default | description |", "|---|---|---|---|---|"]
        for field, spec in body.get("properties", {}).items():
            default = json.dumps(spec["default"]) if "default" in spec else ""
            rows.append(
                f"| `{field}` | {_type(spec)} | {'yes' if field in required else ''} | "
                f"{_cell(default)} | {_cell(_text(spec.get('description', '')))} |"
            )
        parts.append("\n".join(rows) + "\n")
    return "\n".join(parts)


def _type(spec: dict[str, Any]) -> str:
    """The type of a field as a reader says it: ``integer >= 1``, ``Stages``, ``list of
    Task``, ``string or null``; a reference links to its section."""
    if "$ref" in spec:
        name = spec["$ref"].rsplit("/", 1)[1]
        return f"[{name}](#{name.lower()})"
    for key in ("anyOf", "oneOf"):
        if key in spec:
            return " or ".join(_type(s) for s in spec[key])
    if "enum" in spec:
        return " \\| ".join(f"`{json.dumps(v)}`" for v in spec["enum"])
    if "const" in spec:
        return f"`{json.dumps(spec['const'])}`"
    kind = spec.get("type", "any")
    if kind == "array":
        return f"list of {_type(spec.get('items', {}))}"
    if kind == "object" and isinstance(spec.get("additionalProperties"), dict):
        return f"map of {_type(spec['additionalProperties'])}"
    limits = []
    for key, sign in (("minimum", ">="), ("exclusiveMinimum", ">")):
        if key in spec:
            limits.append(f"{sign} {spec[key]:g}")
    for key, sign in (("maximum", "<="), ("exclusiveMaximum", "<")):
        if key in spec and spec[key] != MAX_INT:
            limits.append(f"{sign} {spec[key]:g}")
    if "minLength" in spec:
        limits.append("not empty")
    return " ".join([kind, ", ".join(limits)]).strip()


def _text(text: str) -> str:
    """A docstring's reStructuredText literals as Markdown code."""
    return text.replace("``", "`")


def _cell(text: str) -> str:
    """``text`` fit for one table cell."""
    return text.replace("|", "\\|").replace("\n", " ")
