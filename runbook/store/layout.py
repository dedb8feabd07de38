"""Where things live in a store: the only place that builds store paths."""
from __future__ import annotations

import hashlib
import io
import os
import re
from pathlib import Path
from typing import BinaryIO

from .safe_read import open_store_file

FORMAT_VERSION = 1
META_FILE = "runbook.json"
CATALOG_FILE = "catalog.sqlite"
LOCK_FILE = ".lock"
TRAJECTORIES_DIR = "trajectories"
SUMMARIES_DIR = "summaries"
POOLS_DIR = "pools"
TRAJECTORY_FILE = "trajectory.json"
FINGERPRINT_FILE = "fingerprint"
STATES_DIR = "states"
SCREENSHOTS_DIR = "screenshots"
SUMMARY_TABLE = "trajectories.tsv"
SUMMARY_ACTIONS = "actions.txt"
TMP_PREFIX = ".tmp-"
TRASH_PREFIX = ".trash-"

_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,150}")


def trajectory_dirname(trajectory_id: str) -> str:
    """A folder name for an id: the id itself when it is path-safe, else a cleaned form plus a short hash."""
    if _SAFE_ID.fullmatch(trajectory_id):
        return trajectory_id
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", trajectory_id).strip("._-")[:100] or "trajectory"
    return f"{cleaned}-{hashlib.sha1(trajectory_id.encode()).hexdigest()[:10]}"


def state_filename(index: int) -> str:
    return f"{index:04d}.md"


def screenshot_filename(index: int, suffix: str) -> str:
    return f"{index:04d}{suffix.lower() or '.png'}"


class Layout:
    """Paths of one store, and the one way to read a file in it (no symbolic link inside the store is followed)."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self._real_root: str | None = None

    def open(self, path: str | os.PathLike) -> BinaryIO:
        """A store file (absolute under the root, or root-relative) opened for reading; UnsafeStoreFile when it
        is a symbolic link, passes through one, or is not a regular file."""
        if self._real_root is None:
            self._real_root = os.path.realpath(self.root)  # the root may be a link the user chose: resolved once
        return open_store_file(self._real_root, self.root, path)

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
    def pools(self) -> Path:
        return self.root / POOLS_DIR

    def trajectory_dir(self, dirname: str) -> Path:
        return self.trajectories / dirname

    def state_file(self, dirname: str, index: int) -> Path:
        return self.trajectories / dirname / STATES_DIR / state_filename(index)

    def relative(self, path: Path) -> str:
        """A store-relative path string, as cited in evidence."""
        return str(Path(path).relative_to(self.root))
