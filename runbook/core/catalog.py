"""Reading the store's catalog (catalog.sqlite) read-only, as the sandbox's read-only mount allows, and the
compact form the offline planner's programs rank from."""

from __future__ import annotations

import os
import sqlite3

from .files import check_regular
from .layout import CATALOG_FILE
from .records import RbkError

Catalog = tuple[dict[str, dict], dict[str, str], dict[tuple[str, int], tuple]]
"""load_catalog's result: (trajectory rows by folder, folder by id, a state's meta tuple by (folder, index))."""


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


def load_catalog(root: str) -> Catalog:
    """(rows by dir, dir by id, state meta by (dir, index)) from catalog.sqlite."""
    conn = connect(root)
    try:
        rows, by_id = {}, {}
        for tid, d, site, goal, outcome, success, n, first in conn.execute(
            "SELECT id, dir, site, goal, outcome, success, n_states, first_ts FROM trajectories"
        ):
            rows[d] = {
                "id": tid,
                "dir": d,
                "site": site or "",
                "goal": goal or "",
                "outcome": outcome or "",
                "success": success,
                "n": n,
                "first": first or "",
            }
            by_id[tid] = d
        meta = {}
        for tid, i, url, title, ts, action, error, tokens, shot in conn.execute(
            "SELECT trajectory_id, state_index, url, title, timestamp, action, action_error, tokens, screenshot "
            "FROM states"
        ):
            d = by_id.get(tid)
            if d is not None:
                meta[(d, i)] = (ts or "", url or "", title or "", action or "", error or "", tokens or 1, shot or "")
    finally:
        conn.close()
    return rows, by_id, meta
