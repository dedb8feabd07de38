"""The servers' own errors, each answered with its HTTP status in serve/http.py (defined in runbook/errors.py, with
the rest of the tree)."""

from __future__ import annotations

from ..errors import BusyError, Gone, NotFound

__all__ = ["BusyError", "Gone", "NotFound"]
