"""The servers' own errors (each answered with its HTTP status in serve/http.py)."""

from __future__ import annotations

from ..errors import RunbookError


class BusyError(RunbookError):
    """The store's writer, or every sandbox, stayed busy for longer than the caller agreed to wait."""


class NotFound(RunbookError):
    """No such trajectory, open trajectory or state."""


class Gone(NotFound):
    """An open trajectory that was discarded after the age limit."""
