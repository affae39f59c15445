"""Text a database cannot store: a NUL character (PostgreSQL refuses it in any text column) or a lone
surrogate (a JSON escape such as "\\udfff", which no UTF-8 database can encode). Found at the door, by
the field that holds it, so that such input is a 422 naming the field and never reaches a query."""

from __future__ import annotations

NUL_MESSAGE = "Must not contain NUL characters."
SURROGATE_MESSAGE = "Must be valid Unicode text (it holds a lone surrogate such as \\udfff)."


def text_problem(value: str) -> str | None:
    """Why `value` cannot be stored, or None."""
    if "\x00" in value:
        return NUL_MESSAGE
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return SURROGATE_MESSAGE
    return None


def unstorable_fields(value, where: str = "") -> dict[str, list[str]]:
    """An error per place in a parsed JSON value (objects, lists, their keys and strings) that holds text
    no database stores, named like `candidates[3].trigger`."""
    errors: dict[str, list[str]] = {}
    if isinstance(value, str):
        if problem := text_problem(value):
            errors[where or "_"] = [problem]
    elif isinstance(value, dict):
        for key, item in value.items():
            name = f"{where}.{key}" if where else str(key)
            if problem := text_problem(str(key)):
                errors[f"{where}.{{key}}" if where else "{key}"] = [f"A field name: {problem}"]
            else:
                errors.update(unstorable_fields(item, name))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            errors.update(unstorable_fields(item, f"{where}[{index}]"))
    return errors


def unstorable_parameters(params) -> dict[str, list[str]]:
    """The same for a QueryDict (a query string or a posted form): every value of every name."""
    errors: dict[str, list[str]] = {}
    for name, values in params.lists():
        if problem := text_problem(name):
            errors["{name}"] = [f"A parameter name: {problem}"]
        for value in values:
            if problem := text_problem(value):
                errors[name] = [problem]
    return errors
