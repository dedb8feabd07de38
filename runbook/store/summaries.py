"""Overviews rendered for the agent after each insert: one line per trajectory, and each one's action sequence."""

from __future__ import annotations

import sqlite3
from typing import Any

from .layout import SUMMARY_ACTIONS, SUMMARY_TABLE

TABLE_COLUMNS = ("seq", "id", "site", "outcome", "n_states", "first_time", "last_time", "start_url", "goal")
ACTION_WIDTH = 160


def _clean(value: object) -> str:
    """One line, no tabs: str.split() breaks at every Unicode space and line break (\\u2028, \\x85, \\x1c ...)."""
    return " ".join(str(value if value is not None else "").split())


def render_summaries(store: Any, conn: sqlite3.Connection) -> None:
    """Rewrite summaries/ from the catalog (atomically per file); cheap enough to redo after every insert run."""
    out = store.layout.summaries
    rows = conn.execute(
        "SELECT seq, id, site, outcome, n_states, first_ts, last_ts, start_url, goal FROM trajectories ORDER BY seq"
    ).fetchall()
    table = ["\t".join(TABLE_COLUMNS)] + ["\t".join(_clean(v) for v in row) for row in rows]
    store.layout.replace(out / SUMMARY_TABLE, ("\n".join(table) + "\n").encode("utf-8"))
    actions: dict[str, list[tuple[int, str, str, str]]] = {}
    for tid, idx, url, action, error in conn.execute(
        "SELECT trajectory_id, state_index, url, action, action_error FROM states ORDER BY trajectory_id, state_index"
    ):
        actions.setdefault(tid, []).append((idx, url or "", action or "", error or ""))
    lines = []
    for _seq, tid, site, outcome, n_states, first_ts, _last, _start_url, goal in rows:
        lines.append(f"## {_clean(tid)} | {_clean(site)} | {_clean(outcome)} | {n_states} states | {_clean(first_ts)}")
        lines.append(f"goal: {_clean(goal)}")
        for idx, url, action, error in actions.get(tid, []):
            line = f"  {idx:>3} {_clean(action)[:ACTION_WIDTH]}  @ {_clean(url)}"
            if error:
                line += f"  !! {_clean(error)[:100]}"
            lines.append(line)
        lines.append("")
    # atomically, through the store's layout: a link planted in summaries/ is replaced, never written through
    store.layout.replace(out / SUMMARY_ACTIONS, "\n".join(lines).encode("utf-8"))
