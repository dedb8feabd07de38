"""The store's catalog (catalog.sqlite) as typed records, for both sides of the sandbox: `TrajectoryRow` (one per
trajectory, the host's row too: runbook.store.catalog writes them), `StateMeta` (one per state), and `Catalog`, the
whole catalog in memory as the offline planner's programs rank from it, read read-only as the sandbox's read-only
mount allows."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, fields

from .files import check_regular
from .layout import CATALOG_FILE
from .records import RbkError

StateKey = tuple[str, int]
"""(trajectory folder, state index): a state as the catalog keys it."""


@dataclass(frozen=True, slots=True)
class TrajectoryRow:
    """A trajectory's row of the catalog."""

    seq: int
    """Insertion order: later rows are newer knowledge."""
    id: str
    dir: str
    """Its folder under trajectories/."""
    domain: str
    site: str
    goal: str
    start_url: str
    outcome: str | None
    success: int | None
    """1, 0, or None when the outcome says neither."""
    n_states: int
    n_screenshots: int
    n_errors: int
    tokens: int
    bytes: int
    first_ts: str | None
    last_ts: str | None
    fingerprint: str
    source: str | None
    inserted_at: str


ROW_FIELDS = tuple(f.name for f in fields(TrajectoryRow))
"""The trajectories table's columns, in TrajectoryRow's order."""


def row_from_tuple(values: tuple) -> TrajectoryRow:
    """The row of a `SELECT` of ROW_FIELDS: the one place a catalog row becomes a TrajectoryRow."""
    return TrajectoryRow(*values)


def select_rows(conn: sqlite3.Connection, where: str = "", params: tuple = ()) -> list[TrajectoryRow]:
    """The catalog's trajectory rows in insertion order (`where`: an SQL WHERE clause with `params`), as every
    reader on both sides reads them."""
    sql = f"SELECT {', '.join(ROW_FIELDS)} FROM trajectories {where} ORDER BY seq"
    return [row_from_tuple(values) for values in conn.execute(sql, params)]


@dataclass(slots=True)
class StateMeta:
    """A state as the catalog lists it (its page is in its state file); text fields are '' when unknown. Slotted, not
    frozen: every query builds one per stored state, and a frozen one takes three times as long to build."""

    time: str
    url: str
    title: str
    action: str
    error: str
    """The error its action raised."""
    tokens: int
    """The page's tokens (at least 1)."""
    screenshot: str
    """Its screenshot's path from the trajectory's folder."""


@dataclass(frozen=True)
class Catalog:
    """The whole catalog in memory: what the offline planner's programs rank from (load_catalog)."""

    rows: dict[str, TrajectoryRow]
    """Trajectory rows by folder."""
    folder_of: dict[str, str]
    """A trajectory's folder by its id."""
    states: dict[StateKey, StateMeta]
    """Every state by (folder, index)."""

    def state(self, trajectory_id: str, index: int) -> StateMeta | None:
        """A state by its trajectory's id (None for an unknown id or index)."""
        folder = self.folder_of.get(trajectory_id)
        return None if folder is None else self.states.get((folder, index))


def connect_readonly(path: str) -> sqlite3.Connection:
    """Open the catalog read-only; a WAL database on a read-only mount may need immutable=1."""
    try:
        check_regular(path)  # SQLite would follow a link, and wait on a FIFO
    except OSError as exc:
        raise RbkError(f"cannot read the catalog {path}: {exc.strerror or exc}") from exc
    last = None
    for query in ("mode=ro", "mode=ro&immutable=1"):
        try:
            conn = sqlite3.connect(f"file:{path}?{query}", uri=True, timeout=10)
            conn.execute("SELECT count(*) FROM trajectories").fetchone()
            return conn
        except sqlite3.OperationalError as exc:  # e.g. "unable to open database file" when -shm can't be made
            last = exc
    raise RbkError(f"cannot read the catalog {path}: {last}")


def connect(root: str) -> sqlite3.Connection:
    """The catalog, read-only (immutable when the store's mount cannot hold SQLite's lock files)."""
    return connect_readonly(os.path.join(root, CATALOG_FILE))


def load_catalog(root: str, only: Iterable[str] | None = None) -> Catalog:
    """The catalog of the store at `root`, read once; `only`: just these trajectories (ids) and their states, as a
    scan of a large store reads its candidate runs only (at 179,277 states reading every row took 1.2-1.5 s)."""
    conn = connect(root)
    try:
        wanted = None if only is None else sorted(set(only))
        rows: dict[str, TrajectoryRow] = {}
        folder_of: dict[str, str] = {}
        for row in _trajectory_rows(conn, wanted):
            rows[row.dir] = row
            folder_of[row.id] = row.dir
        states: dict[StateKey, StateMeta] = {}
        for tid, i, url, title, ts, action, error, tokens, shot in _state_rows(conn, wanted):
            d = folder_of.get(tid)
            if d is not None:
                states[(d, i)] = StateMeta(
                    ts or "", url or "", title or "", action or "", error or "", tokens or 1, shot or ""
                )
    finally:
        conn.close()
    return Catalog(rows, folder_of, states)


ID_BATCH = 500
"""Trajectory ids bound per query (SQLite allows 999 parameters in older builds)."""
STATE_COLUMNS = "trajectory_id, state_index, url, title, timestamp, action, action_error, tokens, screenshot"


def _trajectory_rows(conn: sqlite3.Connection, wanted: list[str] | None) -> list[TrajectoryRow]:
    """Every row, or the `wanted` ones, in insertion order."""
    if wanted is None:
        return select_rows(conn)
    batches = [wanted[n : n + ID_BATCH] for n in range(0, len(wanted), ID_BATCH)]
    found = [row for batch in batches for row in select_rows(conn, _id_in("id", batch), tuple(batch))]
    return sorted(found, key=lambda row: row.seq)


def _state_rows(conn: sqlite3.Connection, wanted: list[str] | None) -> Iterator[tuple]:
    """Every state's row (STATE_COLUMNS), or the `wanted` trajectories' ones."""
    if wanted is None:
        yield from conn.execute(f"SELECT {STATE_COLUMNS} FROM states")
        return
    for n in range(0, len(wanted), ID_BATCH):
        batch = wanted[n : n + ID_BATCH]
        yield from conn.execute(f"SELECT {STATE_COLUMNS} FROM states {_id_in('trajectory_id', batch)}", tuple(batch))


def _id_in(column: str, batch: list[str]) -> str:
    """A WHERE clause for `column` in one of `batch`'s values (bound as parameters)."""
    return f"WHERE {column} IN ({', '.join('?' * len(batch))})"
