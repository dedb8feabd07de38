"""What the store readers return: records whose keys are also attributes, lists of hits that know how many
matched in all, and the error a reader raises (defined with the core's other errors in errors.py)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .errors import RbkError, UnreadableState

__all__ = ["Hits", "RbkError", "Record", "UnreadableState"]


class Record(dict):
    """A dict whose keys are also attributes; prints long strings cut short (the full value stays inside)."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __repr__(self) -> str:
        parts = []
        for key, value in self.items():
            if isinstance(value, str) and len(value) > 160:
                value = f"{value[:150]}…(+{len(value) - 150} chars)"
            elif isinstance(value, list) and len(value) > 8:
                value = f"[{len(value)} items]"
            parts.append(f"{key}={value!r}")
        return "{" + ", ".join(parts) + "}"


class Hits(list):
    """A list of hits that also says how many lines matched in all (`total`) and whether some were left out."""

    def __init__(self, items: Iterable = (), total: int = 0, states: int = 0, truncated: bool = False):
        super().__init__(items)
        self.total = total
        self.states = states
        self.truncated = truncated
