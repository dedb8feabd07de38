"""The servers' own errors, each answered with its HTTP status in serve/http.py (defined in runbook/errors.py, with
the rest of the tree), and a request's invalid fields as one InputError for both servers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import BusyError, Gone, InputError, NotFound

SHAPE_TAGS = ("runbook", "agentlab", "browser_use")
"""The tags pydantic puts in a streamed step's error location (the step's shape): not part of the field's name."""

__all__ = ["BusyError", "Gone", "NotFound", "SHAPE_TAGS", "field_name", "invalid_input"]


def invalid_input(errors: Sequence[Any], *, skip: Sequence[str] = ()) -> InputError:
    """pydantic's first validation error as an InputError naming the field ('states[0].url'), in runbook's words:
    no pydantic error type in the field's name, no link to pydantic's documentation. `skip`: location parts that
    are not field names (FastAPI's 'body')."""
    first = errors[0] if errors else {}
    kind, where = first.get("type"), field_name(first.get("loc", ()), skip=skip)
    if kind == "json_invalid":
        return InputError(f"malformed JSON: {first.get('ctx', {}).get('error', first.get('msg', ''))}", field="body")
    if kind == "missing" and where == "body":
        return InputError("the body is missing: send a JSON object", field="body")
    if kind == "missing":
        return InputError("is missing", field=where)
    if kind == "extra_forbidden":
        return InputError("is not a field this takes: see the schema for the fields it takes", field=where)
    if kind in ("model_attributes_type", "dict_type", "model_type"):
        return InputError("must be a JSON object", field=where)
    return InputError(first.get("msg", "is invalid"), field=where)


def field_name(loc: Sequence[Any], *, skip: Sequence[str] = ()) -> str:
    """'states[0].url' from pydantic's ('body', 'states', 0, 'url'); a step's shape tag and `skip` are left out,
    and so is the type a union tried ('budget', not 'budget.int')."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif (part in skip or part in SHAPE_TAGS) and not out:
            continue
        elif part in ("int", "str", "float", "bool", "none", "list", "dict") or "[" in str(part):
            continue  # the branch of a union pydantic tried
        else:
            out += f".{part}" if out else str(part)
    return out or "body"
