"""The host's view of a store's layout (names and paths from runbook.core.layout), and the one way the host
reads or writes a file in it."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import BinaryIO

from ..core.layout import (  # noqa: F401
    CATALOG_FILE,
    DIRTY_FILE,
    FINGERPRINT_FILE,
    FORMAT_VERSION,
    LOCK_FILE,
    META_FILE,
    PENDING_PREFIX,
    POOLS_DIR,
    POOLS_FRESH_PREFIX,
    POOLS_OLD_PREFIX,
    SCREENSHOTS_DIR,
    STATES_DIR,
    SUMMARIES_DIR,
    SUMMARY_ACTIONS,
    SUMMARY_TABLE,
    TMP_PREFIX,
    TRAJECTORIES_DIR,
    TRAJECTORY_FILE,
    TRASH_PREFIX,
    screenshot_filename,
    state_filename,
    trajectory_dirname,
)
from . import safe_write
from .safe_read import open_store_file


class Layout:
    """Paths of one store, and the one way to read or write a file in it (no symbolic link inside the store is
    followed)."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self._real_root: str | None = None

    @property
    def real_root(self) -> str:
        if self._real_root is None:
            self._real_root = os.path.realpath(self.root)  # the root may be a link the user chose: resolved once
        return self._real_root

    def open(self, path: str | os.PathLike) -> BinaryIO:
        """A store file (absolute under the root, or root-relative) opened for reading; UnsafeStoreFile when it
        is a symbolic link, passes through one, or is not a regular file."""
        return open_store_file(self.real_root, self.root, path)

    def open_for_write(self, path: str | os.PathLike, flags: int) -> int:
        """An fd of a store file opened with `flags` (os.O_WRONLY, os.O_CREAT, ...), never through a link."""
        return safe_write.open_for_write(self.real_root, self.root, path, flags)

    def append(self, path: str | os.PathLike, chunks: list[bytes]) -> None:
        """Append to a store file (created, with its folders, when missing), never through a link."""
        safe_write.append(self.real_root, self.root, path, chunks)

    def truncate(self, path: str | os.PathLike, size: int) -> None:
        """Cut a store file to `size` bytes when it is longer, never through a link."""
        safe_write.truncate(self.real_root, self.root, path, size)

    def replace(self, path: str | os.PathLike, data: bytes) -> None:
        """Write a store file atomically (a temporary file renamed over it): a link there is replaced, not
        written through."""
        safe_write.replace(self.real_root, self.root, path, data)

    def read_bytes(self, path: str | os.PathLike) -> bytes:
        with self.open(path) as fh:
            return fh.read()

    def read_text(self, path: str | os.PathLike) -> str:
        """The file's text, newlines translated as Path.read_text does."""
        with io.TextIOWrapper(self.open(path), encoding="utf-8") as fh:
            return fh.read()

    @property
    def meta(self) -> Path:
        return self.root / META_FILE

    @property
    def catalog(self) -> Path:
        return self.root / CATALOG_FILE

    @property
    def lock(self) -> Path:
        return self.root / LOCK_FILE

    @property
    def trajectories(self) -> Path:
        return self.root / TRAJECTORIES_DIR

    @property
    def summaries(self) -> Path:
        return self.root / SUMMARIES_DIR

    @property
    def dirty(self) -> Path:
        return self.root / DIRTY_FILE

    @property
    def pools(self) -> Path:
        return self.root / POOLS_DIR

    def trajectory_dir(self, dirname: str) -> Path:
        return self.trajectories / dirname

    def state_file(self, dirname: str, index: int) -> Path:
        return self.trajectories / dirname / STATES_DIR / state_filename(index)

    def relative(self, path: Path) -> str:
        """A store-relative path string, as cited in evidence."""
        return str(Path(path).relative_to(self.root))
