"""The filters a store reader's calls take: sets given as lists or comma-separated text, a run's outcome, the
state-file fields to search."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .records import RbkError, Record
from .statefile import FIELDS


def as_set(value: Any) -> set:
    if value is None:
        return set()
    if isinstance(value, str):
        return {v.strip() for v in value.split(",") if v.strip()}
    return set(value)


def outcome_matches(row: Record, outcome: Any) -> bool:
    if not outcome:
        return True
    want = str(outcome).lower()
    if want in ("success", "succeeded", "pass", "passed"):
        return row.success is True
    if want in ("failure", "failed", "fail"):
        return row.success is False
    return want in (row.outcome or "").lower()


def field_list(field: Any) -> tuple:
    if field is None:
        return FIELDS
    chosen = [field] if isinstance(field, str) else list(field)
    chosen = [f.strip() for part in chosen for f in part.split(",") if f.strip()]
    bad = [f for f in chosen if f not in FIELDS]
    if bad:
        raise RbkError(f"unknown field {', '.join(bad)}: use any of {', '.join(FIELDS)}")
    return tuple(chosen)


@dataclass(frozen=True)
class LineFilter:
    """Which lines a search of the state files counts: how the pattern matches, in which fields, of which runs and
    when. The keyword arguments StoreReader's search, grep and count take besides their own."""

    ignore_case: bool = False
    fixed: bool = False
    """The pattern is a literal string, not a regex."""
    word: bool = False
    """Match whole words only."""
    field: Any = None
    """The state-file fields to search (a name, a list or comma-separated text); None: all (field_list)."""
    trajectory: Any = None
    """An id, a folder name or a glob, or a list of them; None: every trajectory."""
    site: Any = None
    outcome: Any = None
    """success / failure, or a word of the stored outcome (outcome_matches)."""
    since: str | None = None
    """The earliest state time (ISO 8601), inclusive."""
    until: str | None = None
    """The latest state time; a prefix such as '2025-12' covers the whole month."""
