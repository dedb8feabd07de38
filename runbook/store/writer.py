"""Writing a store: the exclusive writer, which commits staged trajectories one at a time, each atomically (the
order of a commit, and what a crash at each step leaves, is in store/recovery.py)."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import orjson

from ..errors import ConflictError, StoreError
from ..trajectory.model import Trajectory
from . import catalog
from .check import refuse_unsafe_for_writing
from .layout import PENDING_PREFIX, Layout
from .recovery import move_into_place, recover, remove
from .space import disk_full, is_disk_full
from .staging import StagedTrajectory, stage

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class InsertOutcome:
    """What happened to one trajectory on insert."""

    trajectory_id: str
    status: str
    """'inserted', 'replaced', 'unchanged' or 'refused'."""
    states: int = 0
    tokens: int = 0
    message: str = ""


class WrittenStore(Protocol):
    """What a writer needs of the Store it writes: its layout. (store.py imports this module to make writers, so
    this module does not name Store, not even for the type checker: that would be an import cycle.)"""

    layout: Layout


CommitListener = Callable[[Any, StagedTrajectory, str], None]
"""Called with the Store, the staged trajectory and its status ('inserted' or 'replaced') inside the transaction
that commits its catalog rows: when a listener raises, the rows are rolled back and the trajectory's folder removed
(the one it replaced put back). `staged.trajectory` is the Trajectory itself, `staged.final_dirname` its folder. A
listener with a `rollback()` method is asked to undo its part when a later listener or the commit itself fails."""


class StoreWriter:
    """Holds the store's write lock; inserts trajectories one at a time, each atomically."""

    def __init__(self, store: WrittenStore, *, check_pools: bool = True, wait: bool = True):
        """`check_pools`: False for a writer that rebuilds the pools (a link planted in them is discarded then).
        `wait`: False raises BlockingIOError at once when another writer holds the lock."""
        self.store = store
        self.layout = store.layout
        self.listeners: list[CommitListener] = []
        # the lock file is opened without following a link (a dangling one made runbook create a file there)
        self._lock_fd = self.layout.open_for_write(self.layout.lock, os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            refuse_unsafe_for_writing(self.layout, pools=check_pools)  # before anything is written
            self.conn: sqlite3.Connection | None = catalog.connect(self.layout.catalog)
            """None once closed."""
        except BaseException:
            os.close(self._lock_fd)
            raise
        self.changed = False
        self.space_needed: Callable[[], int | None] = lambda: None
        """About how many more bytes the caller still has to write: said when the disk is full."""
        self._recover()

    def __enter__(self) -> StoreWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, _tb: object) -> None:
        """Close (see close()); a full disk, met by the work or by the close, becomes a DiskFull that says where,
        how much is free and about how much more is needed (it was an OSError traceback)."""
        try:
            self.close(render=exc_type is None or self.changed)
        except Exception as failed:
            if not (is_disk_full(failed) or is_disk_full(exc)):
                raise
            exc = exc if is_disk_full(exc) else failed
        if is_disk_full(exc):
            raise disk_full(self.layout.root, self.space_needed()) from exc

    @property
    def _open_conn(self) -> sqlite3.Connection:
        assert self.conn is not None, "the store writer is closed"
        return self.conn

    def close(self, render: bool = True) -> None:
        """Render the summaries (and the listeners' derived data) when something changed, then unlock. The store's
        `.dirty` mark goes only when it is consistent: a writer that fails here leaves it for the next open."""
        if self.conn is None:
            return
        finished = False
        try:
            if render and self.changed:
                from .summaries import render_summaries

                render_summaries(self.store, self.conn)
                for listener in self.listeners:  # derived data built once per batch, still under the lock
                    finish = getattr(listener, "finish", None)
                    if finish is not None:
                        finish(self.store)
            finished = render or not self.changed
        finally:
            self.conn.close()
            self.conn = None
            if finished:
                with contextlib.suppress(FileNotFoundError):
                    self.layout.dirty.unlink()
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)

    def _recover(self) -> None:
        """Mark the store as being written, and undo what a writer stopped midway left (store/recovery.py)."""
        self.layout.trajectories.mkdir(exist_ok=True)
        crashed = os.path.lexists(self.layout.dirty)
        self.layout.replace(self.layout.dirty, f"{os.getpid()}\n".encode())
        done = recover(self.layout, catalog.select_rows(self._open_conn), crashed=crashed)
        if crashed:
            self.changed = True  # the summaries may miss what the stopped writer committed: rendered at close
        if done:
            log.warning(
                "the store at %s was left by a writer stopped midway; recovered: %s",
                self.layout.root,
                "; ".join(map(str, done)),
            )

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
        """Make a staged trajectory visible: commit its catalog rows (and the listeners' part), then move its folder
        into place; until the commit its folder is hidden (store/recovery.py says why, and what a crash leaves)."""
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
        # hidden until its rows commit: no reader, on the host or in the sandbox, sees an uncommitted folder
        pending = self.layout.trajectories / f"{PENDING_PREFIX}{dirname}"
        remove(pending)
        os.replace(staged.folder, pending)
        status = "replaced" if existing else "inserted"
        try:
            # one transaction: the rows and what the listeners derive (the pools) stand or fall together
            with self._open_conn:
                self._insert_rows(staged, dirname, replacing=bool(existing))
                for listener in self.listeners:
                    listener(self.store, staged, status)
        except BaseException:
            self._undo(staged, pending)
            raise
        self.changed = True
        # committed: if this is cut short, the next open (or writer) finishes it (store/recovery.py)
        move_into_place(pending, self.layout.trajectory_dir(dirname))
        return InsertOutcome(staged.trajectory_id, status, staged.n_states, staged.tokens)

    def _undo(self, staged: StagedTrajectory, pending: Path) -> None:
        """After a failed commit (its rows rolled back): the listeners undo their part and the staged folder goes,
        so the store is as it was before this trajectory."""
        for listener in self.listeners:
            rollback = getattr(listener, "rollback", None)
            if rollback is not None:
                rollback(staged)
        remove(pending)

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
                utc_now(),
            ),
        )
        conn.executemany(
            "INSERT INTO states (trajectory_id, state_index, url, title, timestamp, action, action_error, "
            "tokens, screenshot) VALUES (?,?,?,?,?,?,?,?,?)",
            [(staged.trajectory_id, *row) for row in staged.state_rows],
        )


def _discard(staged: StagedTrajectory) -> None:
    if staged.folder:
        remove(Path(staged.folder))


def _source_text(traj: Trajectory) -> str | None:
    if not traj.source:
        return None
    return traj.source.get("path") or traj.source.get("dataset") or orjson.dumps(traj.source).decode()


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
