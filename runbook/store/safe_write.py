"""Writing inside a store without following links: the one way the host appends to, truncates, replaces or creates a
store file (the pools, the summaries, the lock).

Like the safe reads (safe_read.py), a path is reached folder by folder from the store's root with O_NOFOLLOW
(`openat` through `dir_fd`), so a link planted on the way is refused, not followed; the file itself is opened with
O_NOFOLLOW too, and a new file is created with O_EXCL. With `pools/terms.txt` a link to a host file, an insert used
to truncate that file and append to it; now it raises UnsafeStoreFile and writes nothing.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import UnsafeStoreFile
from .safe_read import store_parts

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC
_TEMPORARY = re.compile(r"\.(?P<name>.+)\.tmp(?P<pid>\d+)-[0-9a-f]{8}")


def temporary_name(name: str) -> str:
    """The hidden name `replace` writes `name`'s new content under before renaming it into place."""
    return f".{name}.tmp{os.getpid()}-{os.urandom(4).hex()}"


def stopped_temporary(name: str) -> bool:
    """Whether `name` is a `replace` that stopped before its rename (kill -9, a full disk): a temporary name whose
    writing process is gone. One of a live process is its write under way."""
    found = _TEMPORARY.fullmatch(name)
    if found is None:
        return False
    pid = int(found["pid"])
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False  # alive, another user's
    return False


@contextmanager
def parent_folder(real_root: str, root: Path, path: str | os.PathLike, *, create: bool = False) -> Iterator[int]:
    """An fd of the folder that holds `path` (under `root`, whose real path is `real_root`) and the file's name;
    `create`: make missing folders on the way. UnsafeStoreFile when a folder on the way is a link."""
    parts = store_parts(root, path)
    fd = os.open(real_root, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
    try:
        for depth, part in enumerate(parts[:-1], 1):
            if create:
                try:
                    os.mkdir(part, 0o755, dir_fd=fd)
                except FileExistsError:
                    pass
            try:
                inner = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise _refused(path, "/".join(parts[:depth]), "a symbolic link (or not a folder)") from exc
                raise
            os.close(fd)
            fd = inner
        yield fd
    finally:
        os.close(fd)


def open_for_write(real_root: str, root: Path, path: str | os.PathLike, flags: int, mode: int = 0o644) -> int:
    """An fd of `path` opened with `flags` (O_WRONLY, O_APPEND, O_CREAT, ...) plus O_NOFOLLOW; UnsafeStoreFile when
    it, or a folder on the way, is a link, or when it is not a regular file."""
    name = store_parts(root, path)[-1]
    with parent_folder(real_root, root, path, create=bool(flags & os.O_CREAT)) as folder:
        try:
            fd = os.open(name, flags | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC, mode, dir_fd=folder)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _refused(path, path, "a symbolic link") from exc
            if exc.errno in (errno.ENXIO, errno.EISDIR):  # a FIFO without a reader, a folder
                raise _refused(path, path, "not a regular file") from exc
            raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _refused(path, path, "not a regular file")
        os.set_blocking(fd, True)
        return fd
    except BaseException:
        os.close(fd)
        raise


def append(real_root: str, root: Path, path: str | os.PathLike, chunks: list[bytes]) -> None:
    """Append `chunks` to `path` (created when missing)."""
    fd = open_for_write(real_root, root, path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    with os.fdopen(fd, "wb") as fh:
        for chunk in chunks:
            fh.write(chunk)


def truncate(real_root: str, root: Path, path: str | os.PathLike, size: int) -> None:
    """Cut `path` to `size` bytes when it is longer (nothing when it does not exist)."""
    try:
        fd = open_for_write(real_root, root, path, os.O_WRONLY)
    except FileNotFoundError:
        return
    try:
        if os.fstat(fd).st_size > size:
            os.ftruncate(fd, size)
    finally:
        os.close(fd)


def replace(real_root: str, root: Path, path: str | os.PathLike, data: bytes) -> None:
    """Write `path` atomically: a new temporary file beside it (O_EXCL: never an existing file or link), then a
    rename over it, which replaces a link planted there instead of writing through it."""
    name = store_parts(root, path)[-1]
    with parent_folder(real_root, root, path, create=True) as folder:
        tmp = temporary_name(name)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | _CLOEXEC, 0o644, dir_fd=folder)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.rename(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=folder)
            except OSError:
                pass
            raise


def _refused(path: str | os.PathLike, where: str | os.PathLike, what: str) -> UnsafeStoreFile:
    return UnsafeStoreFile(
        f"store file {path}: {where} is {what}; runbook writes into a store without following links, so nothing "
        f"was written (`runbook store check` lists every such file)"
    )
