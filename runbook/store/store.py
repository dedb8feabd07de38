"""The on-disk store: open or create it, insert trajectories atomically and idempotently, read them back."""

from __future__ import annotations

import fcntl
import logging
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import orjson

from ..errors import RunbookError, StoreChanging, StoreError
from ..trajectory.model import Trajectory, trajectory_from_dict
from . import catalog
from .catalog import TrajectoryRow
from .check import check_catalog
from .layout import (
    FINGERPRINT_FILE,
    FORMAT_VERSION,
    PENDING_PREFIX,
    STATES_DIR,
    TRAJECTORY_FILE,
    Layout,
    state_filename,
)
from .recovery import needs_recovery
from .statefile import parse_state
from .writer import InsertOutcome, StoreWriter, utc_now

__all__ = ["InsertOutcome", "Store", "StoreWriter"]

T = TypeVar("T")
log = logging.getLogger(__name__)


class Store:
    """A runbook store on disk (see ARCHITECTURE.md's store layout)."""

    def __init__(self, root: str | os.PathLike, *, create: bool = False, recover: bool = True):
        """`recover`: undo what a writer stopped midway left, when no writer is at work (see store/recovery.py)."""
        # absolute (links kept): store files are opened from the root down, so a relative root would be looked up
        # inside itself ('.runbook/.runbook/...')
        self.layout = Layout(Path(root).absolute())
        self.root = self.layout.root
        if not self.layout.meta.exists():
            if not create:
                raise StoreError(
                    f"no runbook store at {self.root}: run `runbook insert PATH` first, "
                    "or pass --store DIR / set RUNBOOK_STORE"
                )
            self._create()
        meta = orjson.loads(self.layout.read_bytes(self.layout.meta))
        if meta.get("format") != FORMAT_VERSION:
            raise StoreError(
                f"{self.layout.meta}: store format {meta.get('format')} is not supported "
                f"(this runbook reads format {FORMAT_VERSION})"
            )
        self.meta = meta
        if recover:
            self.recover_if_idle()

    def recover_if_idle(self) -> bool:
        """Undo what a writer stopped midway left (store/recovery.py), unless a writer is at work (what it left is
        its work in progress), the store is not ours to write, or a file where writers write is planted (`runbook
        store check` names it); whether it did."""
        if not needs_recovery(self.layout):
            return False
        try:
            StoreWriter(self, wait=False).close()
        except (OSError, RunbookError) as exc:  # busy (BlockingIOError), not ours, a read-only file system
            log.debug("the store at %s was not recovered: %s", self.root, exc)
            return False
        return True

    def _create(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.layout.trajectories.mkdir(exist_ok=True)
        catalog.connect(self.layout.catalog).close()
        meta = {"format": FORMAT_VERSION, "created": utc_now(), "layout": "trajectories/<id>/states/NNNN.md"}
        self.layout.replace(self.layout.meta, orjson.dumps(meta, option=orjson.OPT_INDENT_2))

    # -- reading -------------------------------------------------------------------------------------------------
    def connect(self) -> sqlite3.Connection:
        check_catalog(self.layout)  # SQLite would follow a planted link, or wait on a FIFO
        return catalog.connect(self.layout.catalog, readonly=True)

    def rows(self) -> list[TrajectoryRow]:
        """Every trajectory's catalog row, in insertion order."""
        with self._read() as conn:
            return catalog.select_rows(conn)

    def row(self, trajectory_id: str) -> TrajectoryRow | None:
        with self._read() as conn:
            found = catalog.select_rows(conn, "WHERE id = ?", (trajectory_id,))
        return found[0] if found else None

    def __len__(self) -> int:
        with self._read() as conn:
            return conn.execute("SELECT count(*) FROM trajectories").fetchone()[0]

    def _read(self) -> _Closing:
        return _Closing(self.connect())

    def trajectory_dir(self, trajectory_id: str) -> Path:
        row = self.row(trajectory_id)
        if row is None:
            raise StoreError(f"no trajectory {trajectory_id!r} in the store at {self.root}")
        return self.layout.trajectory_dir(row.dir)

    def load(self, trajectory_id: str) -> Trajectory:
        """The stored trajectory, screenshots as absolute paths inside the store."""
        return self._settled(lambda: self.trajectory_dir(trajectory_id), self._load_folder)

    def _settled(self, folder: Callable[[], Path], read: Callable[[Path], T]) -> T:
        """`read(folder())`, again for a moment while a committed trajectory's folder is not in place: a writer
        moves it there right after its catalog rows commit; one stopped in between is recovered here when idle."""
        pause = 0.002
        for attempt in range(_SETTLE_READS):
            path = folder()
            try:
                return read(path)
            except FileNotFoundError:
                moving = os.path.lexists(path.with_name(PENDING_PREFIX + path.name)) or not os.path.lexists(path)
                if not moving or attempt == _SETTLE_READS - 1:
                    raise  # a file missing from a folder in place: nothing is on its way
                if attempt == 2 and needs_recovery(self.layout):
                    self.recover_if_idle()
                time.sleep(pause)
                pause = min(pause * 2, 0.05)
        raise AssertionError("unreachable")

    def _load_folder(self, folder: Path) -> Trajectory:
        obj = orjson.loads(self.layout.read_bytes(folder / TRAJECTORY_FILE))
        return trajectory_from_dict(
            obj,
            path=str(folder / TRAJECTORY_FILE),
            base_dir=str(folder),
            check_screenshots=False,
            check_times=False,
            lenient=True,
        )  # checked when they were copied in (or stored before times were checked, or with fields kept verbatim)

    def state_path(self, trajectory_id: str, index: int) -> Path:
        return self.trajectory_dir(trajectory_id) / STATES_DIR / state_filename(index)

    def read_state(self, trajectory_id: str, index: int) -> tuple[dict[str, str], str]:
        """(header fields, page text) of one stored state; UnsafeStoreFile when the file is a planted link."""
        name = state_filename(index)
        return self._settled(
            lambda: self.trajectory_dir(trajectory_id),
            lambda d: parse_state(self.layout.read_text(d / STATES_DIR / name)),
        )

    def read_state_file(self, dirname: str, index: int) -> tuple[dict[str, str], str]:
        """(header fields, page text) of a state named by its trajectory's folder (as the pools record it)."""
        name = state_filename(index)
        return self._settled(
            lambda: self.layout.trajectory_dir(dirname),
            lambda d: parse_state(self.layout.read_text(d / STATES_DIR / name)),
        )

    def load_committed(self, trajectory_id: str) -> tuple[TrajectoryRow, Trajectory] | None:
        """(catalog row, trajectory) of one committed version, or None when the id is not stored. What a server
        reads while a writer may replace the trajectory: the row and the files agree (see `_as_committed`)."""
        return self._as_committed(trajectory_id, lambda _row, folder: self._load_folder(folder))

    def read_committed_state(self, trajectory_id: str, index: int) -> tuple[TrajectoryRow, tuple[dict, str] | None]:
        """(catalog row, (header, page text) of state `index`, or None past its last state) of one committed
        version; StoreError when the id is not stored."""

        def read(row: TrajectoryRow, folder: Path) -> tuple[dict, str] | None:
            if not 0 <= index < row.n_states:
                return None
            return parse_state(self.layout.read_text(folder / STATES_DIR / state_filename(index)))

        found = self._as_committed(trajectory_id, read)
        if found is None:
            raise StoreError(f"no trajectory {trajectory_id!r} in the store at {self.root}")
        return found

    def _as_committed(
        self, trajectory_id: str, read: Callable[[TrajectoryRow, Path], T]
    ) -> tuple[TrajectoryRow, T] | None:
        """`read(row, folder)` of a version whose folder holds what its catalog row says: the folder's fingerprint
        is the row's before and after the read. A writer replacing a trajectory renames the new folder in before
        its row commits (and for a moment there is no folder): a reader that lands in between reads again, so it
        never pairs one version's row with the other's files (a GET once said n_states 1 beside 2 states)."""
        pause = 0.002
        for attempt in range(_COMMITTED_READS):
            row = self.row(trajectory_id)
            if row is None:
                return None
            folder = self.layout.trajectory_dir(row.dir)
            try:
                if _folder_fingerprint(self.layout, folder) == row.fingerprint:
                    value = read(row, folder)
                    if _folder_fingerprint(self.layout, folder) == row.fingerprint:
                        return row, value
            except FileNotFoundError:
                pass  # committed, not yet moved into place (or between the two renames of a replace)
            if attempt == 2 and needs_recovery(self.layout):
                self.recover_if_idle()  # a writer stopped between its commit and the move: finished here
            time.sleep(pause)
            pause = min(pause * 2, 0.05)
        raise StoreChanging(
            f"trajectory {trajectory_id!r} kept changing while it was read ({_COMMITTED_READS} tries): retry"
        )

    def iter_trajectories(self) -> Iterator[Trajectory]:
        for row in self.rows():
            yield self.load(row.id)

    # -- writing -------------------------------------------------------------------------------------------------
    def writer(self, *, check_pools: bool = True) -> StoreWriter:
        """Exclusive writer: serialises concurrent inserts and repairs what a crashed writer left. UnsafeStoreFile,
        before anything is written, when a file where it writes is a link or not a regular file."""
        return StoreWriter(self, check_pools=check_pools)

    def writing(self) -> bool:
        """Whether a writer holds the store's lock now (in this process or another)."""
        try:
            fh = self.layout.open(self.layout.lock)
        except (FileNotFoundError, StoreError):
            return False  # never written, or a planted lock (which a writer refuses)
        with fh:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
            return False

    def stats(self) -> dict:
        from .stats import compute_stats

        return compute_stats(self)


class _Closing:
    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        return self.conn

    def __exit__(self, *exc: object) -> None:
        self.conn.close()


_COMMITTED_READS = 200
"""Reads of a trajectory a writer is replacing before giving up (about 10 s: a replace commits in well under)."""
_SETTLE_READS = 40
"""Reads of a committed trajectory's file that is not in place yet before giving up (about 1.8 s)."""


def _folder_fingerprint(layout: Layout, folder: Path) -> str:
    """The fingerprint a trajectory's folder was written with; FileNotFoundError when the folder is not there."""
    return layout.read_text(folder / FINGERPRINT_FILE).strip()
