"""The SQLite catalog: one row per trajectory (in insertion order) and one per state. Its row type, `TrajectoryRow`,
and the one query that reads rows, `select_rows`, are the core's (runbook.core.catalog): the host and the sandbox
read one catalog model."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ..core.catalog import TrajectoryRow, select_rows

__all__ = ["SCHEMA", "TrajectoryRow", "connect", "select_rows"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS trajectories (
    seq           INTEGER PRIMARY KEY AUTOINCREMENT,  -- insertion order: later rows are newer knowledge
    id            TEXT NOT NULL UNIQUE,
    dir           TEXT NOT NULL UNIQUE,
    domain        TEXT,
    site          TEXT,
    goal          TEXT,
    start_url     TEXT,
    outcome       TEXT,
    success       INTEGER,                            -- 1, 0, or NULL when the outcome says neither
    n_states      INTEGER NOT NULL,
    n_screenshots INTEGER NOT NULL,
    n_errors      INTEGER NOT NULL,
    tokens        INTEGER NOT NULL,
    bytes         INTEGER NOT NULL,
    first_ts      TEXT,
    last_ts       TEXT,
    fingerprint   TEXT NOT NULL,
    source        TEXT,
    inserted_at   TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS states (
    trajectory_id TEXT NOT NULL REFERENCES trajectories(id) ON DELETE CASCADE,
    state_index   INTEGER NOT NULL,
    url           TEXT,
    title         TEXT,
    timestamp     TEXT,
    action        TEXT,
    action_error  TEXT,
    tokens        INTEGER NOT NULL,
    screenshot    TEXT,
    PRIMARY KEY (trajectory_id, state_index)
);
CREATE INDEX IF NOT EXISTS states_url ON states(url);
CREATE INDEX IF NOT EXISTS states_time ON states(timestamp);
"""


def connect(path: Path, *, readonly: bool = False) -> sqlite3.Connection:
    """Open the catalog; WAL lets readers go on while one writer commits."""
    if readonly:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    else:
        conn = sqlite3.connect(path, timeout=30)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.executescript(SCHEMA)
    conn.execute("PRAGMA foreign_keys=ON")
    return conn
