"""Store statistics: counts, tokens and bytes, per site and outcome."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def _disk_bytes(root: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(dirpath, name))
            except OSError:
                pass
    return total


def compute_stats(store: Any) -> dict:
    """One JSON-able dict: trajectories, states, screenshots, tokens, bytes on disk, per site and per outcome."""
    with store._read() as conn:
        total = conn.execute(
            "SELECT count(*), coalesce(sum(n_states),0), coalesce(sum(n_screenshots),0), "
            "coalesce(sum(tokens),0), coalesce(sum(n_errors),0), min(first_ts), max(last_ts) "
            "FROM trajectories"
        ).fetchone()
        per_site = {
            site or "": {"trajectories": n, "states": s, "tokens": t, "successes": ok or 0}
            for site, n, s, t, ok in conn.execute(
                "SELECT site, count(*), sum(n_states), sum(tokens), sum(success) FROM trajectories "
                "GROUP BY site ORDER BY site"
            )
        }
        per_outcome = {
            ("success" if ok == 1 else "failure" if ok == 0 else "unknown"): n
            for ok, n in conn.execute("SELECT success, count(*) FROM trajectories GROUP BY success")
        }
    return {
        "store": str(store.root),
        "trajectories": total[0],
        "states": total[1],
        "screenshots": total[2],
        "tokens": total[3],
        "action_errors": total[4],
        "first_time": total[5],
        "last_time": total[6],
        "bytes_on_disk": _disk_bytes(store.root),
        "per_site": per_site,
        "per_outcome": per_outcome,
    }
