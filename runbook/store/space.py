"""A full disk under a writer: told apart from other errors, and said as what to do (how much is free on the file
system that holds the store, about how much more the write needs) instead of an OSError traceback. Whatever a
writer stopped by a full disk leaves, the next open undoes (store/recovery.py), so the same command run again, with
space freed, completes."""

from __future__ import annotations

import errno
import os
import sqlite3
import struct
from collections.abc import Iterable
from pathlib import Path

from ..errors import DiskFull

STORE_PER_INPUT_BYTE = 3.2
"""Store bytes per byte of input JSON: 20 WebArena trajectories, 3.68 MB of JSONL, took 11.4 MB of store (their
files 7.0 MB: trajectory.json and the state files both hold the pages; pools 4.2 MB)."""
_FULL_ERRNOS = {errno.ENOSPC, errno.EDQUOT}


def is_disk_full(exc: BaseException | None) -> bool:
    """An OSError for no space (or over quota), or SQLite's 'database or disk is full'."""
    if isinstance(exc, OSError) and exc.errno in _FULL_ERRNOS:
        return True
    return isinstance(exc, sqlite3.OperationalError) and "disk is full" in str(exc)


def free_bytes(path: str | os.PathLike) -> int | None:
    """Bytes an unprivileged writer can still use on the file system holding `path` (None when unknown)."""
    try:
        stats = os.statvfs(path)
    except OSError:
        return None
    return stats.f_bavail * stats.f_frsize


def disk_full(root: Path, needed: int | None) -> DiskFull:
    """The error to raise: where, how much is free, about how much more is needed, and what to do."""
    free = free_bytes(root)
    more = f"; it needs about {_mb(needed)} more" if needed else ""
    return DiskFull(
        f"the disk holding the store at {root} is full ({_mb(free) if free is not None else 'nothing'} free{more}). "
        "Free space there (or use another --store) and run the same command again: what was committed is kept, "
        "and what was not is undone when the store is next opened"
    )


def input_json_bytes(paths: Iterable[str | os.PathLike]) -> int:
    """The bytes the input holds once decompressed (a .gz file's from its trailer), files under folders included."""
    total = 0
    for raw in paths:
        path = Path(raw)
        files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()] if path.is_dir() else []
        total += sum(_decompressed_size(f) for f in files)
    return total


def _decompressed_size(path: Path) -> int:
    size = path.stat().st_size
    if path.suffix.lower() != ".gz" or size < 18:
        return size
    try:
        with open(path, "rb") as fh:
            if fh.read(2) != b"\x1f\x8b":
                return size
            fh.seek(-4, os.SEEK_END)
            (isize,) = struct.unpack("<I", fh.read(4))  # the size modulo 2**32 (RFC 1952)
    except OSError:
        return size
    # over 4 GiB the trailer has wrapped: WebArena's JSONL compresses about 9 to 1
    return max(isize, size) if size < 1 << 32 else size * 9


def _mb(value: int | None) -> str:
    if value is None:
        return "?"
    return f"{value / 1e6:,.1f} MB" if value >= 100_000 else f"{max(value, 1000) / 1e3:,.0f} KB"
