"""Opening a store file where the core reads one (the sandbox's programs above all): a regular file only; a symbolic
link is not followed and a FIFO is never waited on. The host reads through runbook.store.safe_read, which also
refuses a link anywhere on the path; inside the sandbox only the store is mounted, so the file itself is what matters
(a FIFO planted among the state files held each tool call that opened it for its whole timeout: method C took 61 s).
And the one way an array file (a cache) is written: into a temporary file of its own, renamed into place.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path
from typing import IO, Any

from .errors import NotRegularFile

_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


def check_regular(path: str | os.PathLike) -> None:
    """NotRegularFile unless `path` itself (not what a link points to) is a regular file; FileNotFoundError when
    it does not exist. For a file opened by another library (SQLite)."""
    mode = os.lstat(path).st_mode
    if not stat.S_ISREG(mode):
        raise NotRegularFile(errno.EINVAL, f"{_kind(mode)}, not a regular file", os.fspath(path))


def open_regular(path: str | os.PathLike, mode: str = "r", **text_options: Any) -> IO:
    """`path` opened for reading ('r' text, with `text_options` such as encoding; 'rb' bytes); NotRegularFile when it
    is not a regular file or is a symbolic link."""
    try:
        fd = os.open(path, _FLAGS)  # non-blocking: opening a FIFO returns at once instead of waiting for a writer
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NotRegularFile(errno.ELOOP, "a symbolic link, not followed", os.fspath(path)) from exc
        raise
    try:
        file_mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(file_mode):
            raise NotRegularFile(errno.EINVAL, f"{_kind(file_mode)}, not a regular file", os.fspath(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, mode, **text_options)
    except BaseException:
        os.close(fd)
        raise


_KINDS = (
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a device"),
    (stat.S_ISBLK, "a device"),
)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "a special file")


def save_atomic(path: Path, **arrays: Any) -> None:
    """`np.savez` into a temporary file of its own, renamed over `path`; best effort (nothing on an OSError).
    A name of its own: two threads of one server once shared `<name>.tmp<pid>`, and one renamed the other's
    half-written file into place (EOFError for every reader after it)."""
    import numpy as np

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".npz", dir=path.parent)  # O_EXCL
        try:
            with os.fdopen(fd, "wb") as fh:
                np.savez(fh, **arrays)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        pass
