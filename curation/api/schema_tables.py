"""An OpenAPI schema as the rows of a readable table (field, type, required, meaning) for the API docs page:
references resolved, nested objects and lists of objects flattened to dotted names (`evidence[].kind`), and
each type said in words ("text, at most 500 characters", "one of: self, independent, external")."""

from __future__ import annotations

from dataclasses import dataclass

# Deeper than this, a field's type says "object" instead of listing its fields (no schema here nests so far).
MAX_DEPTH = 4


@dataclass(frozen=True)
class FieldRow:
    name: str
    type: str
    required: bool
    meaning: str


def resolve(node: dict, spec: dict) -> dict:
    """`node`, or what its "$ref" ("#/components/schemas/Name") points at."""
    while isinstance(node, dict) and "$ref" in node:
        target = spec
        for part in node["$ref"].lstrip("#/").split("/"):
            target = target[part]
        node = target
    return node


def _words_for_one(kind: str, node: dict) -> str:
    if kind == "string":
        fmt = {"date-time": "a date and time (ISO 8601)", "date": "a date (YYYY-MM-DD)"}.get(node.get("format", ""))
        if fmt:
            return fmt
        limits = []
        if node.get("minLength"):
            limits.append(f"at least {node['minLength']}")
        if "maxLength" in node:
            limits.append(f"at most {node['maxLength']}")
        return "text" + (f", {' and '.join(limits)} characters" if limits else "")
    if kind in ("integer", "number"):
        word = "whole number" if kind == "integer" else "number"
        low, high = node.get("minimum"), node.get("maximum")
        if low is not None and high is not None:
            return f"{word} from {low:g} to {high:g}"
        if low is not None:
            return f"{word}, at least {low:g}"
        if high is not None:
            return f"{word}, at most {high:g}"
        return word
    return {"boolean": "true or false", "object": "object", "array": "list", "null": "null"}.get(kind, kind)


def type_in_words(node: dict, spec: dict) -> str:
    """A schema's type as a reader says it."""
    node = resolve(node, spec)
    if "enum" in node:
        return "one of: " + ", ".join(str(v) for v in node["enum"])
    kind = node.get("type", "object" if "properties" in node else "")
    if kind == "array":
        items = resolve(node.get("items", {}), spec)
        limit = f"up to {node['maxItems']} " if "maxItems" in node else ""
        if items.get("type") == "object" or "properties" in items:
            return f"list of {limit}objects"
        return f"list of {limit}items, each {type_in_words(items, spec)}" if items else f"list of {limit}values"
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        text = " or ".join(_words_for_one(k, node) for k in kinds) or "null"
        return text + (", or null" if "null" in kind else "")
    return _words_for_one(kind, node) if kind else "any value"


def meaning(node: dict) -> str:
    """A field's description, its default and an example of a patterned value."""
    parts = [node.get("description", "")]
    if "default" in node:
        parts.append(f"Default: {node['default']}.")
    if "pattern" in node and "example" in node:
        parts.append(f"E.g. {node['example']}.")
    return " ".join(p for p in parts if p)


def field_rows(schema: dict, spec: dict, *, prefix: str = "", depth: int = 0) -> list[FieldRow]:
    """One row per field of an object schema, its nested objects' fields after it with dotted names."""
    node = resolve(schema, spec)
    if node.get("type") == "array" and not prefix:
        return field_rows(node.get("items", {}), spec, prefix="[]", depth=depth)
    required = set(node.get("required", ()))
    rows = []
    for name, child in node.get("properties", {}).items():
        child = resolve(child, spec)
        full = f"{prefix}.{name}" if prefix and prefix != "[]" else (f"[].{name}" if prefix == "[]" else name)
        rows.append(FieldRow(full, type_in_words(child, spec), name in required, meaning(child)))
        if depth < MAX_DEPTH:
            items = resolve(child.get("items", {}), spec) if child.get("type") == "array" else None
            if items and "properties" in items:
                rows += field_rows(items, spec, prefix=f"{full}[]", depth=depth + 1)
            elif "properties" in child:
                rows += field_rows(child, spec, prefix=full, depth=depth + 1)
    return rows


def body_schema(part: dict) -> dict | None:
    """The JSON schema of a request body or a response, if it has one."""
    return part.get("content", {}).get("application/json", {}).get("schema")
