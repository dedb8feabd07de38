"""Errors a user can hit, each saying what was wrong and where: every one runbook raises on purpose, in one tree.

RunbookError                    the root (defined in runbook/core/errors.py: the core runs in the sandbox too)
├── InputError                  a trajectory file or folder cannot be read as a trajectory
│   ├── UnknownFormatError      no reader recognises the path
│   └── FolderUnreadable        an AgentLab step pickle that cannot be read or rebuilt
├── ScreenshotRefused           a screenshot that must not go into the store (a ValueError too)
├── NotAnImage                  bytes Pillow cannot read as an image (a ValueError too)
├── StoreError                  the store is missing, locked, or of another format version
│   ├── ConflictError           a different trajectory already has this id (use --replace)
│   ├── StoreChanging           a trajectory kept being replaced while it was read: retry (a server answers 503)
│   ├── DiskFull                the disk holding the store is full; says how much is free and about how much more
│   └── UnsafeStoreFile         a store file is a symbolic link, not a regular file, or outside the store
├── NotOpen                     no open (streamed) trajectory by this id
│   └── Expired                 the open trajectory went past the age limit and was discarded
├── PoolError                   method R's pools cannot be read as they are; says to run `runbook reindex` (core)
├── RbkError                    a store request the sandbox's programs cannot answer; says what to change (core)
│   └── UnreadableState         a state file that is not a regular file (core)
├── NotRegularFile              a store file that is a link, a FIFO, a device or a folder (core; an OSError too)
├── QueryError                  an empty question, or a question image that is missing or not an image
├── BudgetError                 a token budget that cannot be parsed
├── SandboxError                no sandbox backend can run, or a sandbox call failed to start
├── ToolError                   a tool call the toolbox refuses; the message is what the policy reads
├── ConfigError                 a policy, model, key or reader is asked for but not configured
├── JudgeError                  a judge's reply with no label that can be read
├── BusyError                   the writer or each sandbox stayed busy past the wait; open trajectories at the cap (503)
├── NotFound                    no such trajectory, open trajectory or state (404)
│   └── Gone                    an open trajectory discarded after the age limit (410)
└── RequestRefused              a server answered the client with an error: its status and the field it names

Outside the tree, on purpose:
AgentStop                       how the agent loop ends, not an error (runbook/agent/exceptions.py draws its
                                subclasses): the loop catches every one and reports its reason; `Finished` is success
BodyOverLimit                   raised into the HTTP app from `receive` once a body passed its limit, after the 413 is
                                sent, and caught by the same middleware (runbook/serve/body_limit.py); as a
                                RunbookError the app's handler would answer it a second time
Interrupted                     a stop signal (SIGTERM, SIGHUP) raised as the KeyboardInterrupt Ctrl-C raises
                                (runbook/cli/__init__.py), so a command unwinds and cleans up as on Ctrl-C; as a
                                RunbookError the CLI would report a clean stop as an error and exit 1

The core's errors are defined in runbook/core/errors.py and imported here; every other one is defined here, and the
modules that raise them import them from here.
"""

from __future__ import annotations

from .core.errors import NotRegularFile, PoolError, RbkError, RunbookError, UnreadableState


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


class FolderUnreadable(InputError):
    """A step pickle that cannot be read or rebuilt: the whole folder is unreadable, so read() raises it."""


class ScreenshotRefused(RunbookError, ValueError):
    """A screenshot file that must not go into the store; the message says why (readers add where)."""


class NotAnImage(RunbookError, ValueError):
    """Pillow cannot read these bytes as an image; the message says why."""


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


class NotOpen(RunbookError):
    """No open trajectory by this id."""


class Expired(NotOpen):
    """The open trajectory went without a step for longer than the age limit and was discarded."""


class QueryError(RunbookError, ValueError):
    """A question that cannot be asked: empty, or with an image that is missing or not an image."""


class BudgetError(RunbookError, ValueError):
    """A budget string such as '8k' that cannot be parsed."""


class SandboxError(RunbookError):
    """No sandbox backend is usable, or the sandbox failed."""


class ToolError(RunbookError):
    """A call the tools refuse to run; the message is what the policy reads."""


class ConfigError(RunbookError):
    """A model, key or reader is needed but not configured."""


class JudgeError(RunbookError):
    """The judge's reply has no label that can be read."""


class BusyError(RunbookError):
    """The store's writer, or every sandbox, stayed busy for longer than the caller agreed to wait; or the server
    holds as many open trajectories as it may."""


class NotFound(RunbookError):
    """No such trajectory, open trajectory or state."""


class Gone(NotFound):
    """An open trajectory that was discarded after the age limit."""


class RequestRefused(RunbookError):
    """The server answered with an error: `status`, and the `field` it names."""

    def __init__(self, status: int, message: str, field: str | None = None):
        self.status, self.field = status, field
        super().__init__(f"{status}: {message}")


__all__ = [
    "RunbookError",
    "InputError",
    "UnknownFormatError",
    "FolderUnreadable",
    "ScreenshotRefused",
    "NotAnImage",
    "StoreError",
    "ConflictError",
    "StoreChanging",
    "DiskFull",
    "UnsafeStoreFile",
    "NotOpen",
    "Expired",
    "PoolError",
    "RbkError",
    "UnreadableState",
    "NotRegularFile",
    "QueryError",
    "BudgetError",
    "SandboxError",
    "ToolError",
    "ConfigError",
    "JudgeError",
    "BusyError",
    "NotFound",
    "Gone",
    "RequestRefused",
]
