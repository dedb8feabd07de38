"""The root of runbook's error tree and the core's own errors; runbook/errors.py draws the whole tree.

The core imports nothing else of runbook (it runs inside the sandbox too), so the root is defined here, and the
host's errors in runbook/errors.py grow from it: `except RunbookError` catches a core error on either side.
"""

from __future__ import annotations


class RunbookError(Exception):
    """Base of every error runbook raises on purpose."""


class PoolError(RunbookError):
    """The pools cannot be read as they are; the message says what to run."""


class RbkError(RunbookError):
    """A request the store cannot answer; the message says what to change."""


class UnreadableState(RbkError):
    """A state whose file is not a regular file (a FIFO, a link, ...): not read, as the host does not read it."""


class NotRegularFile(RunbookError, OSError):
    """A store file that is a symbolic link, a FIFO, a socket, a device or a folder: not read. An OSError, so the
    readers that leave out a state they cannot read leave this one out too."""
