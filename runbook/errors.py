"""Errors a user can hit, each saying what was wrong and where.

RunbookError
├── InputError              a trajectory file or folder cannot be read as a trajectory
│   └── UnknownFormatError  no reader recognises the path
├── StoreError              the store is missing, locked, or of another format version
│   ├── ConflictError       a different trajectory already has this id (use --replace)
│   └── UnsafeStoreFile     a store file is a symbolic link, not a regular file, or outside the store
├── QueryError              an empty question, or a question image that is missing or not an image
├── BudgetError             a token budget that cannot be parsed
├── SandboxError            no sandbox backend can run, or a sandbox call failed to start
└── ConfigError             a policy or reader is asked for but not configured
"""

from __future__ import annotations


class RunbookError(Exception):
    """Base of every error runbook raises on purpose."""


class InputError(RunbookError):
    """A trajectory source is malformed: names the file, the line or trajectory, and the field."""

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        trajectory_id: str | None = None,
        field: str | None = None,
    ):
        self.path, self.line, self.trajectory_id, self.field = path, line, trajectory_id, field
        self.reason = message
        where = []
        if path:
            where.append(f"{path}:{line}" if line else str(path))
        if trajectory_id:
            where.append(f"trajectory {trajectory_id!r}")
        if field:
            where.append(f"field {field!r}")
        super().__init__(f"{', '.join(where)}: {message}" if where else message)


class UnknownFormatError(InputError):
    """No reader recognises this file or folder."""


class StoreError(RunbookError):
    """The store cannot be opened or written."""


class ConflictError(StoreError):
    """A different trajectory is already stored under this id."""


class StoreChanging(StoreError):
    """A trajectory kept being replaced while it was read: retry (a server answers 503)."""


class DiskFull(StoreError):
    """The file system holding the store has no room left for a write (the message says how much is free)."""


class UnsafeStoreFile(StoreError):
    """A store file that is not read: a symbolic link (or a path through one), not a regular file, or outside."""


class QueryError(RunbookError, ValueError):
    """A question that cannot be asked: empty, or with an image that is missing or not an image."""


class BudgetError(RunbookError, ValueError):
    """A budget string such as '8k' that cannot be parsed."""


class SandboxError(RunbookError):
    """No sandbox backend is usable, or the sandbox failed."""


class ConfigError(RunbookError):
    """A model, key or reader is needed but not configured."""
