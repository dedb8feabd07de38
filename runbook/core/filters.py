"""The filters a store reader's calls take: sets given as lists or comma-separated text, a run's outcome, the
state-file fields to search."""

from __future__ import annotations

from .records import RbkError, Record
from .statefile import FIELDS


def as_set(value) -> set:
    if value is None:
        return set()
    if isinstance(value, str):
        return {v.strip() for v in value.split(",") if v.strip()}
    return set(value)


def outcome_matches(row: Record, outcome) -> bool:
    if not outcome:
        return True
    want = str(outcome).lower()
    if want in ("success", "succeeded", "pass", "passed"):
        return row.success is True
    if want in ("failure", "failed", "fail"):
        return row.success is False
    return want in (row.outcome or "").lower()


def field_list(field) -> tuple:
    if field is None:
        return FIELDS
    chosen = [field] if isinstance(field, str) else list(field)
    chosen = [f.strip() for part in chosen for f in part.split(",") if f.strip()]
    bad = [f for f in chosen if f not in FIELDS]
    if bad:
        raise RbkError(f"unknown field {', '.join(bad)}: use any of {', '.join(FIELDS)}")
    return tuple(chosen)
