"""Reading the store's catalog (catalog.sqlite) read-only, as the sandbox's read-only mount allows."""
from __future__ import annotations

import sqlite3

from .records import RbkError


def connect_readonly(path: str) -> sqlite3.Connection:
    """Open the catalog read-only; a WAL database on a read-only mount may need immutable=1."""
    last = None
    for query in ("mode=ro", "mode=ro&immutable=1"):
        try:
            conn = sqlite3.connect(f"file:{path}?{query}", uri=True, timeout=10)
            conn.execute("SELECT count(*) FROM trajectories").fetchone()
            return conn
        except sqlite3.OperationalError as exc:  # e.g. "unable to open database file" when -shm can't be made
            last = exc
    raise RbkError(f"cannot read the catalog {path}: {last}")
