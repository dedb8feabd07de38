"""Open a store file for reading without following symbolic links: the one way the host reads the store.

A store can come from elsewhere (copied, unpacked, shared), and a symlink planted in it would make the host put
a host file into a context. So a path is opened component by component from the store root with O_NOFOLLOW
(`openat` through `dir_fd`), which is race-free: a link swapped in mid-way is refused, not followed. The store
root itself may be a link the user chose; it is resolved once, when the store is opened.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path, PurePath
from typing import BinaryIO

from ..errors import UnsafeStoreFile

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC
# O_NONBLOCK: opening a FIFO planted in the store must not hang the query
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC


def store_parts(root: Path, path: str | os.PathLike) -> tuple[str, ...]:
    """The components of `path` below `root` (`path` relative to the root, or absolute under it)."""
    parts = PurePath(path).parts
    if PurePath(path).is_absolute():
        root_parts = PurePath(root).parts
        if parts[: len(root_parts)] != root_parts:
            raise UnsafeStoreFile(f"{path} is outside the store at {root}: not read")
        parts = parts[len(root_parts) :]
    if not parts:
        raise UnsafeStoreFile(f"{path} names the store itself, not a file in it")
    for part in parts:
        if part in ("..", ".", ""):
            raise UnsafeStoreFile(f"{path} has a {part!r} component: store paths go down from the root only")
    return parts


def open_store_file(real_root: str, root: Path, path: str | os.PathLike) -> BinaryIO:
    """`path` (under `root`, whose real path is `real_root`) opened for reading; UnsafeStoreFile when it is a
    symbolic link, passes through one, or is not a regular file. A missing file raises FileNotFoundError."""
    parts = store_parts(root, path)
    fd = os.open(real_root, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
    try:
        for depth, part in enumerate(parts, 1):
            inner = _open_at(fd, part, _DIR_FLAGS if depth < len(parts) else _FILE_FLAGS, path, "/".join(parts[:depth]))
            os.close(fd)
            fd = inner
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnsafeStoreFile(
                f"store file {path} is not a regular file (a folder, FIFO, socket or device): not read"
            )
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _open_at(dir_fd: int, name: str, flags: int, path: str | os.PathLike, shown: str) -> int:
    """`name` inside the folder `dir_fd`; a link, or a file where a folder belongs, is refused."""
    try:
        return os.open(name, flags, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise UnsafeStoreFile(
                f"store file {path}: {shown} is a symbolic link (or not a folder); the store is "
                f"read without following links, so it is not read"
            ) from exc
        raise
