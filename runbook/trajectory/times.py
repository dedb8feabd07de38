"""A state's time: ISO-8601 or nothing, never going backwards within a trajectory.

Every reader and the servers check times here, so a store holds no `"yesterday"` and no run whose steps go back in
time. A time is kept as written; a number is read as unix seconds and written as ISO-8601 UTC.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from ..errors import InputError

EXAMPLE = "2025-12-18T22:17:41.342Z"
"""A well-formed time, shown in error messages."""


def parse_time(value: str) -> datetime | None:
    """`value` as an aware datetime (a time without a zone is taken as UTC), or None when it is not ISO-8601."""
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def iso(moment: datetime) -> str:
    """`moment` as ISO-8601 UTC with milliseconds and a Z, the form runbook writes."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def now_iso() -> str:
    """The current time as runbook writes it."""
    return iso(datetime.now(UTC))


def check_timestamp(value: Any, *, field: str, where: dict[str, Any]) -> str | None:
    """`value` as a state's time: None for none, ISO-8601 text as given, unix seconds converted; an InputError
    naming `field` otherwise."""
    if value is None or value == "":
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return iso(datetime.fromtimestamp(value, tz=UTC))
        except (OverflowError, OSError, ValueError):
            raise InputError(f"{value!r} is not a unix time in range", field=field, **where) from None
    if not isinstance(value, str):
        raise InputError(f"must be an ISO-8601 string, got {type(value).__name__}", field=field, **where)
    if parse_time(value) is None:
        raise InputError(f"{value[:60]!r} is not an ISO-8601 time such as {EXAMPLE}", field=field, **where)
    return value


def check_time_order(times: Sequence[str | None], *, field: str | Callable[[int], str], where: dict[str, Any]) -> None:
    """Raise an InputError on the first state whose time is earlier than an earlier state's (`field` names the
    state's time field from its position: a format string such as 'states[{}].timestamp', or a function)."""
    latest: tuple[int, datetime] | None = None
    for pos, text in enumerate(times):
        moment = parse_time(text) if text else None
        if moment is None:
            continue
        if latest is not None and moment < latest[1]:
            raise InputError(
                f"{text!r} is earlier than state {latest[0]}'s {times[latest[0]]!r}: a trajectory's states must be "
                f"in time order",
                field=field(pos) if callable(field) else field.format(pos),
                **where,
            )
        latest = (pos, moment)
