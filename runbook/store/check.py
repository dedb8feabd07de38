"""Which files of a store are links, FIFOs or other non-regular files: every one (`runbook store check`), or the
ones where a writer writes (checked before an insert writes anything).

A store can come from elsewhere (copied, unpacked, shared). Readers already leave such files out; a writer must not
write through them either, and an insert that found one only after committing catalog rows would leave a half
state, so the writer looks first.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from ..errors import UnsafeStoreFile
from .layout import CATALOG_FILE, DIRTY_FILE, LOCK_FILE, META_FILE, POOLS_DIR, SUMMARIES_DIR, TRAJECTORIES_DIR, Layout

CATALOG_FILES = (CATALOG_FILE, f"{CATALOG_FILE}-wal", f"{CATALOG_FILE}-shm", f"{CATALOG_FILE}-journal")
"""The catalog and the files SQLite keeps beside it: SQLite opens them following links."""


@dataclass(frozen=True, slots=True)
class Unsafe:
    """A store entry that is not what the store holds there."""

    path: str
    """Relative to the store's root."""
    kind: str
    """'a symbolic link to ...', 'a FIFO', 'a socket', 'a device', 'a file where a folder belongs', ..."""

    def __str__(self) -> str:
        return f"{self.path} ({self.kind})"


def unsafe_entries(layout: Layout) -> list[Unsafe]:
    """Every entry of the store that is a link, a FIFO, a socket or a device (folders are walked, links are not)."""
    found = []
    for top in _entries(layout.root):
        found += _walk(layout.root, top)
    return found


def unsafe_for_writing(layout: Layout, *, pools: bool = True) -> list[Unsafe]:
    """The entries a writer writes to or through that are not what they should be: the root's files, the folders
    it writes in, everything under pools/ (`pools`: False when the pools are about to be rebuilt)."""
    found = []
    for name in (META_FILE, LOCK_FILE, DIRTY_FILE, *CATALOG_FILES):
        found += _not_regular(layout.root, name)
    for name in (TRAJECTORIES_DIR, SUMMARIES_DIR, POOLS_DIR):
        found += _not_folder(layout.root, name)
    if (layout.root / TRAJECTORIES_DIR).is_dir() and not (layout.root / TRAJECTORIES_DIR).is_symlink():
        for entry in _entries(layout.root / TRAJECTORIES_DIR):  # each trajectory's folder is renamed and removed
            found += _not_folder(layout.root, f"{TRAJECTORIES_DIR}/{entry}")
    if pools and (layout.root / POOLS_DIR).is_dir() and not (layout.root / POOLS_DIR).is_symlink():
        found += _walk(layout.root, POOLS_DIR)
    return found


def check_catalog(layout: Layout) -> None:
    """UnsafeStoreFile when the catalog (or a file SQLite keeps beside it) is a link or not a regular file."""
    found = [problem for name in CATALOG_FILES for problem in _not_regular(layout.root, name)]
    if found:
        raise UnsafeStoreFile(
            f"the catalog of the store at {layout.root} is not a plain file: {', '.join(map(str, found))}; it is "
            "not opened (SQLite would follow the link). Restore the store from a copy you trust"
        )


def refuse_unsafe_for_writing(layout: Layout, *, pools: bool = True) -> None:
    """UnsafeStoreFile naming every entry `unsafe_for_writing` finds, before anything is written."""
    found = unsafe_for_writing(layout, pools=pools)
    if not found:
        return
    shown = ", ".join(map(str, found[:6])) + (f" and {len(found) - 6} more" if len(found) > 6 else "")
    advice = "`runbook reindex` rebuilds pools/; " if any(p.path.startswith(f"{POOLS_DIR}/") for p in found) else ""
    raise UnsafeStoreFile(
        f"the store at {layout.root} has files where runbook writes that are links or not regular files: {shown}. "
        f"Nothing was written: runbook does not write through them. {advice}remove the others or restore the store "
        "from a copy you trust; `runbook store check` lists every such file"
    )


def _entries(folder: Path) -> list[str]:
    try:
        return sorted(os.listdir(folder))
    except FileNotFoundError:
        return []


def _walk(root: Path, rel: str) -> list[Unsafe]:
    """`rel` and, when it is a real folder, everything under it (links are reported, never followed)."""
    mode = _lstat(root / rel)
    if mode is None:
        return []
    if stat.S_ISDIR(mode):
        return [problem for name in _entries(root / rel) for problem in _walk(root, f"{rel}/{name}")]
    return [] if stat.S_ISREG(mode) else [Unsafe(rel, _kind(root / rel, mode))]


def _not_regular(root: Path, rel: str) -> list[Unsafe]:
    mode = _lstat(root / rel)
    return [] if mode is None or stat.S_ISREG(mode) else [Unsafe(rel, _kind(root / rel, mode))]


def _not_folder(root: Path, rel: str) -> list[Unsafe]:
    mode = _lstat(root / rel)
    if mode is None or stat.S_ISDIR(mode):
        return []
    return [Unsafe(rel, "a file where a folder belongs" if stat.S_ISREG(mode) else _kind(root / rel, mode))]


def _lstat(path: Path) -> int | None:
    try:
        return os.lstat(path).st_mode
    except FileNotFoundError:
        return None


def _kind(path: Path, mode: int) -> str:
    if stat.S_ISLNK(mode):
        return f"a symbolic link to {os.readlink(path)}"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"
