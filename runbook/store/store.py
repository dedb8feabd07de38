"""The on-disk store: open or create it, insert trajectories atomically and idempotently, read them back."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

import orjson

from ..errors import ConflictError, StoreChanging, StoreError
from ..trajectory.model import Trajectory, trajectory_from_dict
from . import catalog
from .catalog import TrajectoryRow
from .check import check_catalog, refuse_unsafe_for_writing
from .layout import (
    FINGERPRINT_FILE,
    FORMAT_VERSION,
    STATES_DIR,
    TMP_PREFIX,
    TRAJECTORY_FILE,
    TRASH_PREFIX,
    Layout,
    state_filename,
)
from .staging import StagedTrajectory, stage
from .statefile import parse_state

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class InsertOutcome:
    """What happened to one trajectory on insert."""

    trajectory_id: str
    status: str
    """'inserted', 'replaced', 'unchanged' or 'refused'."""
    states: int = 0
    tokens: int = 0
    message: str = ""


class Store:
    """A runbook store on disk (see ARCHITECTURE.md's store layout)."""

    def __init__(self, root: str | os.PathLike, *, create: bool = False):
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

    def _create(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.layout.trajectories.mkdir(exist_ok=True)
        catalog.connect(self.layout.catalog).close()
        meta = {"format": FORMAT_VERSION, "created": _now(), "layout": "trajectories/<id>/states/NNNN.md"}
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
        return self._load_folder(self.trajectory_dir(trajectory_id))

    def _load_folder(self, folder: Path) -> Trajectory:
        obj = orjson.loads(self.layout.read_bytes(folder / TRAJECTORY_FILE))
        return trajectory_from_dict(
            obj, path=str(folder / TRAJECTORY_FILE), base_dir=str(folder), check_screenshots=False, check_times=False
        )  # checked when they were copied in (or stored before times were checked)

    def state_path(self, trajectory_id: str, index: int) -> Path:
        return self.trajectory_dir(trajectory_id) / STATES_DIR / state_filename(index)

    def read_state(self, trajectory_id: str, index: int) -> tuple[dict[str, str], str]:
        """(header fields, page text) of one stored state; UnsafeStoreFile when the file is a planted link."""
        return parse_state(self.layout.read_text(self.state_path(trajectory_id, index)))

    def read_state_file(self, dirname: str, index: int) -> tuple[dict[str, str], str]:
        """(header fields, page text) of a state named by its trajectory's folder (as the pools record it)."""
        return parse_state(self.layout.read_text(self.layout.state_file(dirname, index)))

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
        for _ in range(_COMMITTED_READS):
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
                pass  # between the two renames of a replace
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


CommitListener = Callable[["Store", StagedTrajectory, str], None]
"""Called with a trajectory's status ('inserted' or 'replaced') inside the transaction that commits its catalog
rows: when a listener raises, the rows are rolled back and the trajectory's folder removed (the one it replaced put
back). `staged.trajectory` is the Trajectory itself, `staged.final_dirname` its folder. A listener with a
`rollback()` method is asked to undo its part when a later listener or the commit itself fails."""


class StoreWriter:
    """Holds the store's write lock; inserts trajectories one at a time, each atomically."""

    def __init__(self, store: Store, *, check_pools: bool = True):
        """`check_pools`: False for a writer that rebuilds the pools (a link planted in them is discarded then)."""
        self.store = store
        self.layout = store.layout
        self.listeners: list[CommitListener] = []
        # the lock file is opened without following a link (a dangling one made runbook create a file there)
        self._lock_fd = self.layout.open_for_write(self.layout.lock, os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
            refuse_unsafe_for_writing(self.layout, pools=check_pools)  # before anything is written
        except BaseException:
            os.close(self._lock_fd)
            raise
        self.conn: sqlite3.Connection | None = catalog.connect(self.layout.catalog)
        """None once closed."""
        self.changed = False
        self._recover()

    def __enter__(self) -> StoreWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        self.close(render=exc_type is None or self.changed)

    @property
    def _open_conn(self) -> sqlite3.Connection:
        assert self.conn is not None, "the store writer is closed"
        return self.conn

    def close(self, render: bool = True) -> None:
        if self.conn is None:
            return
        try:
            if render and self.changed:
                from .summaries import render_summaries

                render_summaries(self.store, self.conn)
                for listener in self.listeners:  # derived data built once per batch, still under the lock
                    finish = getattr(listener, "finish", None)
                    if finish is not None:
                        finish(self.store)
        finally:
            self.conn.close()
            self.conn = None
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)

    def _recover(self) -> None:
        """Undo what a killed writer left: temporary folders, uncommitted folders, a replace cut in half."""
        base = self.layout.trajectories
        base.mkdir(exist_ok=True)
        known = {row.dir: row.fingerprint for row in catalog.select_rows(self._open_conn)}
        for entry in base.iterdir():
            name = entry.name
            if name.startswith(TMP_PREFIX):
                shutil.rmtree(entry, ignore_errors=True)
            elif name.startswith(TRASH_PREFIX):
                original = base / name[len(TRASH_PREFIX) :]
                if known.get(original.name) == _read_fingerprint(self.layout, entry) and _read_fingerprint(
                    self.layout, original
                ) != known.get(original.name):
                    # the replacement was renamed in but its row never committed: put the old one back
                    shutil.rmtree(original, ignore_errors=True)
                    os.replace(entry, original)
                else:
                    shutil.rmtree(entry, ignore_errors=True)
        for entry in base.iterdir():
            if not entry.name.startswith((TMP_PREFIX, TRASH_PREFIX)) and entry.name not in known:
                shutil.rmtree(entry, ignore_errors=True)  # renamed in, but its catalog row never committed

    def known_fingerprints(self) -> dict[str, str]:
        """id -> fingerprint of every stored trajectory (workers use it to skip unchanged ones early)."""
        return dict(self._open_conn.execute("SELECT id, fingerprint FROM trajectories"))

    def insert(self, trajectory: Trajectory, *, replace: bool = False) -> InsertOutcome:
        """Insert one trajectory: unchanged if already stored, refused if its id holds another (unless replace)."""
        row = self._open_conn.execute("SELECT fingerprint FROM trajectories WHERE id = ?", (trajectory.id,)).fetchone()
        staged = stage(trajectory, self.layout.trajectories, known_fingerprint=row[0] if row else None)
        staged.trajectory = trajectory
        return self.commit(staged, replace=replace)

    def commit(self, staged: StagedTrajectory, *, replace: bool = False) -> InsertOutcome:
        """Make a staged trajectory visible: rename its folder into place, then commit its catalog rows."""
        existing = catalog.select_rows(self._open_conn, "WHERE id = ?", (staged.trajectory_id,))
        if existing and existing[0].fingerprint == staged.fingerprint:
            _discard(staged)
            return InsertOutcome(staged.trajectory_id, "unchanged", staged.n_states)
        if existing and not replace:
            _discard(staged)
            err = ConflictError(
                f"trajectory {staged.trajectory_id!r} is already stored with different content "
                f"(inserted {existing[0].inserted_at}); pass --replace to overwrite it"
            )
            return InsertOutcome(staged.trajectory_id, "refused", staged.n_states, message=str(err))
        if staged.folder is None:  # a worker saw a fingerprint that has changed since: stage it here
            if staged.trajectory is None:
                raise StoreError(f"trajectory {staged.trajectory_id!r} changed while inserting; run the insert again")
            return self.insert(staged.trajectory, replace=replace)
        dirname = existing[0].dir if existing else self._free_dirname(staged.dirname, staged.trajectory_id)
        staged.final_dirname = dirname
        final = self.layout.trajectory_dir(dirname)
        trash = None
        if final.exists():
            trash = self.layout.trajectories / f"{TRASH_PREFIX}{dirname}"
            shutil.rmtree(trash, ignore_errors=True)
            os.replace(final, trash)
        os.replace(staged.folder, final)
        status = "replaced" if existing else "inserted"
        try:
            # one transaction: the rows and what the listeners derive (the pools) stand or fall together
            with self._open_conn:
                self._insert_rows(staged, dirname, replacing=bool(existing))
                for listener in self.listeners:
                    listener(self.store, staged, status)
        except BaseException:
            self._undo(staged, final, trash)
            raise
        if trash is not None:
            shutil.rmtree(trash, ignore_errors=True)
        self.changed = True
        return InsertOutcome(staged.trajectory_id, status, staged.n_states, staged.tokens)

    def _undo(self, staged: StagedTrajectory, final: Path, trash: Path | None) -> None:
        """After a failed commit (its rows rolled back): the listeners undo their part, the new folder goes and the
        one it replaced comes back, so the store is as it was before this trajectory."""
        for listener in self.listeners:
            rollback = getattr(listener, "rollback", None)
            if rollback is not None:
                rollback(staged)
        shutil.rmtree(final, ignore_errors=True)
        if trash is not None:
            os.replace(trash, final)

    def _free_dirname(self, dirname: str, trajectory_id: str) -> str:
        """The folder name for a new id; two ids that clean to the same name get a hash suffix."""
        taken = self._open_conn.execute("SELECT 1 FROM trajectories WHERE dir = ?", (dirname,)).fetchone()
        if not taken:
            return dirname
        return f"{dirname}-{hashlib.sha1(trajectory_id.encode()).hexdigest()[:10]}"

    def _insert_rows(self, staged: StagedTrajectory, dirname: str, *, replacing: bool) -> None:
        """The trajectory's catalog rows, inside the caller's transaction."""
        traj = staged.trajectory
        assert traj is not None  # attached by insert(), or by the writer process before commit()
        success = traj.succeeded
        conn = self._open_conn
        if replacing:
            conn.execute("DELETE FROM states WHERE trajectory_id = ?", (staged.trajectory_id,))
            conn.execute("DELETE FROM trajectories WHERE id = ?", (staged.trajectory_id,))
        conn.execute(
            "INSERT INTO trajectories (id, dir, domain, site, goal, start_url, outcome, success, n_states, "
            "n_screenshots, n_errors, tokens, bytes, first_ts, last_ts, fingerprint, source, inserted_at) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                staged.trajectory_id,
                dirname,
                traj.domain,
                traj.site,
                traj.goal,
                traj.start_url,
                traj.outcome,
                None if success is None else int(success),
                staged.n_states,
                staged.n_screenshots,
                staged.n_errors,
                staged.tokens,
                staged.bytes,
                traj.first_timestamp,
                traj.last_timestamp,
                staged.fingerprint,
                _source_text(traj),
                _now(),
            ),
        )
        conn.executemany(
            "INSERT INTO states (trajectory_id, state_index, url, title, timestamp, action, action_error, "
            "tokens, screenshot) VALUES (?,?,?,?,?,?,?,?,?)",
            [(staged.trajectory_id, *row) for row in staged.state_rows],
        )


def _discard(staged: StagedTrajectory) -> None:
    if staged.folder:
        shutil.rmtree(staged.folder, ignore_errors=True)


_COMMITTED_READS = 200
"""Reads of a trajectory a writer is replacing before giving up (about 10 s: a replace commits in well under)."""


def _folder_fingerprint(layout: Layout, folder: Path) -> str:
    """The fingerprint a trajectory's folder was written with; FileNotFoundError when the folder is not there."""
    return layout.read_text(folder / FINGERPRINT_FILE).strip()


def _read_fingerprint(layout: Layout, folder: Path) -> str | None:
    try:
        return layout.read_text(folder / FINGERPRINT_FILE).strip()
    except (OSError, StoreError):  # missing, or planted (a link, a FIFO): not this writer's fingerprint
        return None


def _source_text(traj: Trajectory) -> str | None:
    if not traj.source:
        return None
    return traj.source.get("path") or traj.source.get("dataset") or orjson.dumps(traj.source).decode()


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
