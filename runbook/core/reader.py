"""A runbook store read from Python, read-only: catalog rows, state files, and ripgrep over them in time order.
`rbk` (the module the agent imports in the sandbox) is this reader's default instance as module functions."""

from __future__ import annotations

import fnmatch
import os
import re
import sys
from typing import Any

from .catalog import TrajectoryRow, connect_readonly, select_rows
from .files import NotRegularFile, open_regular
from .filters import LineFilter, as_set, outcome_matches
from .grep import SORTS, RipgrepSearch  # noqa: F401  (rbk re-exports SORTS)
from .layout import CATALOG_FILE, STATES_DIR, state_relpath, trajectory_relpath
from .records import Hits, RbkError, Record, UnreadableState
from .ripgrep import _python_regex
from .statefile import header_time, parse_state
from .values import _hit_value, _only_changes, _value_near


def default_store_dir() -> str:
    """The store folder: env RUNBOOK_STORE_DIR, else /store."""
    return os.environ.get("RUNBOOK_STORE_DIR") or "/store"


def row_record(row: TrajectoryRow) -> Record:
    """A catalog row as the python tool's `rbk.trajectories()` shows it: times named first_time and last_time,
    success a bool, text fields '' when unknown."""
    return Record(
        id=row.id,
        seq=row.seq,
        site=row.site or "",
        domain=row.domain or "",
        goal=row.goal or "",
        start_url=row.start_url or "",
        outcome=row.outcome,
        success=None if row.success is None else bool(row.success),
        n_states=row.n_states,
        n_errors=row.n_errors,
        first_time=row.first_ts,
        last_time=row.last_ts,
        dir=row.dir,
    )


class StoreReader(RipgrepSearch):
    """One store on disk, read-only: catalog rows, state files, and ripgrep over them."""

    def __init__(self, root: str | None = None):
        self.root = os.path.abspath(root or default_store_dir())
        self.catalog_path = os.path.join(self.root, CATALOG_FILE)
        if not os.path.isfile(self.catalog_path):
            raise RbkError(
                f"no runbook store at {self.root} (no catalog.sqlite): pass --store DIR or set "
                "RUNBOOK_STORE_DIR to the store folder"
            )
        self._rows: list | None = None
        self._pools: tuple | None = None
        self._by_id: dict = {}
        self._by_dir: dict = {}
        self._state_meta: dict | None = None

    # -- catalog -------------------------------------------------------------------------------------------------
    def _load(self) -> None:
        if self._rows is not None:
            return
        conn = connect_readonly(self.catalog_path)
        try:
            records = [row_record(row) for row in select_rows(conn)]
        finally:
            conn.close()
        records.sort(key=lambda r: (r.first_time or "", r.seq))
        self._rows = records
        self._by_id = {r.id: r for r in records}
        self._by_dir = {r.dir: r for r in records}

    def _meta(self) -> dict:
        """(dir, index) -> (time, url) for every state, from the catalog."""
        if self._state_meta is None:
            self._load()
            conn = connect_readonly(self.catalog_path)
            try:
                rows = conn.execute("SELECT trajectory_id, state_index, timestamp, url FROM states").fetchall()
            finally:
                conn.close()
            meta = {}
            for tid, idx, ts, url in rows:
                rec = self._by_id.get(tid)
                if rec is not None:
                    meta[(rec.dir, idx)] = (ts or rec.first_time or "", url or "")
            self._state_meta = meta
        return self._state_meta

    def trajectories(self, site: Any = None, outcome: Any = None, goal: str | None = None) -> list:
        """Catalog rows (id, site, goal, outcome, success, n_states, first_time, ...), oldest first; goal is a regex."""
        rows = self._loaded_rows()
        sites = as_set(site)
        goal_rx = re.compile(goal, re.I) if goal else None
        return [
            r
            for r in rows
            if (not sites or r.site in sites)
            and outcome_matches(r, outcome)
            and (goal_rx is None or goal_rx.search(r.goal))
        ]

    def _loaded_rows(self) -> list:
        self._load()
        assert self._rows is not None  # _load() sets them
        return self._rows

    def trajectory(self, trajectory_id: str) -> Record:
        """One catalog row by id (a unique prefix also works)."""
        self._load()
        if trajectory_id in self._by_id:
            return self._by_id[trajectory_id]
        starts = [r for r in self._loaded_rows() if r.id.startswith(trajectory_id)]
        if len(starts) == 1:
            return starts[0]
        import difflib

        close = starts[:8] or [self._by_id[i] for i in difflib.get_close_matches(trajectory_id, self._by_id, 5, 0.6)]
        hint = f"; did you mean: {', '.join(r.id for r in close)}" if close else "; list ids with rbk.trajectories()"
        raise RbkError(f"no trajectory {trajectory_id!r} in the store{hint}")

    # -- states --------------------------------------------------------------------------------------------------
    def state_path(self, trajectory_id: str, index: int) -> str:
        """The absolute path of a state file."""
        rec = self.trajectory(trajectory_id)
        if not 0 <= index < rec.n_states:
            raise RbkError(f"{rec.id} has states 0-{rec.n_states - 1}, not {index}")
        return os.path.join(self.root, state_relpath(rec.dir, index))

    def state(self, trajectory_id: str, index: int) -> Record:
        """One state: trajectory, index, n_states, time, url, title, action, error, thought, screenshot, text, path."""
        rec = self.trajectory(trajectory_id)
        if index < 0:
            index += rec.n_states
        path = self.state_path(rec.id, index)
        try:
            with open_regular(path, encoding="utf-8", errors="replace") as fh:
                fields, text, n_header = parse_state(fh.read())
        except NotRegularFile as exc:
            raise UnreadableState(
                f"state {index} of {rec.id} is not read: {os.path.relpath(path, self.root)} is {exc.strerror}"
            ) from None
        return Record(
            trajectory=rec.id,
            index=index,
            n_states=rec.n_states,
            time=header_time(fields),
            url=fields.get("url", ""),
            title=fields.get("title", ""),
            action=fields.get("action", ""),
            error=fields.get("error", ""),
            thought=fields.get("thought", ""),
            screenshot=fields.get("screenshot", ""),
            text=text,
            header_lines=n_header,
            path=os.path.relpath(path, self.root),
        )

    def page(self, trajectory_id: str, index: int) -> Record:
        """One state's page structure as parsed at insert: blocks (kind, region, text; a row's `header` is the index
        of its table's header block) and `tables` (each: header cells, then each row's cells)."""
        from .findings import tables
        from .layout import POOLS_DIR
        from .pools import PoolError, PoolSnapshot

        rec = self.trajectory(trajectory_id)
        index = index + rec.n_states if index < 0 else index
        if self._pools is None:
            snapshot = PoolSnapshot(os.path.join(self.root, POOLS_DIR))
            self._pools = (snapshot, snapshot.state_docs())
        snapshot, doc_of = self._pools
        doc = doc_of.get((rec.id, index))
        if doc is None:
            raise RbkError(f"no page structure for {rec.id} state {index}: the store's pools do not hold it "
                           f"(`runbook reindex` builds them)")  # fmt: skip
        try:
            _, page = snapshot.page(doc)
        except PoolError as exc:
            raise RbkError(str(exc)) from exc
        blocks = [Record(kind=b.kind, region=b.region, text=b.text, header=b.header) for b in page.blocks]
        return Record(trajectory=rec.id, index=index, form=page.form, blocks=blocks, tables=tables(page))

    def states(self, trajectory_id: str) -> list:
        """Every state of one trajectory, in order (see state()); one whose file is not a regular file is left out,
        and said so on stderr."""
        rec = self.trajectory(trajectory_id)
        out = []
        for i in range(rec.n_states):
            try:
                out.append(self.state(rec.id, i))
            except UnreadableState as exc:
                print(f"rbk: left out: {exc}", file=sys.stderr)
        return out

    def errors(self, site: Any = None, trajectory: Any = None, outcome: Any = None) -> list:
        """States whose action raised an error, oldest first: {trajectory, state, time, url, action, error}."""
        out = []
        for h in self.grep(r"\S", field="error", site=site, trajectory=trajectory, outcome=outcome, limit=None):
            st = self.state(h.trajectory, h.state)
            out.append(
                Record(trajectory=h.trajectory, state=h.state, time=h.time, url=h.url, action=st.action, error=st.error)
            )
        return out

    # -- search --------------------------------------------------------------------------------------------------
    def _scope_paths(self, trajectory: Any = None, site: Any = None, outcome: Any = None) -> list | None:
        """State folders to search (store-relative), or None for all."""
        if trajectory is None and site is None and outcome is None:
            return None
        self._load()
        rows = self.trajectories(site=site, outcome=outcome)
        if trajectory is not None:
            wanted = trajectory_names(trajectory)
            exact = {w for w in wanted if not any(c in w for c in "*?[")}
            globs = [w for w in wanted if w not in exact]
            # a set for the names, so that a thousand of them (a large store's candidate runs) cost one lookup a row
            keep = [
                r for r in rows if r.id in exact or r.dir in exact or any(fnmatch.fnmatchcase(r.id, g) for g in globs)
            ]
            if not keep and len(wanted) == 1 and not any(c in wanted[0] for c in "*?["):
                keep = [r for r in rows if r.id == self.trajectory(wanted[0]).id]
            rows = keep
        return [f"{trajectory_relpath(r.dir)}/{STATES_DIR}" for r in rows]

    def grep(
        self,
        pattern: str,
        *,
        limit: int | None = 2000,
        per_state: int | None = None,
        sort: str = "time",
        after: int = 0,
        **filters: Any,
    ) -> Hits:
        """Matching lines oldest first (sort="newest": newest first, "count": busiest states first), at most limit."""
        found = self.search(pattern, limit=limit, per_state=per_state, sort=sort, after=after, **filters)
        for h in found.hits:
            h.pop("spans", None)
        return Hits(found.hits, found.total_lines, found.total_states, found.truncated)

    def count(self, pattern: str, *, by: str = "state", **filters: Any) -> dict:
        """Matching lines per state {(trajectory, state): n} (by="trajectory": {trajectory: n}), oldest first;
        `filters` as grep's (ignore_case, fixed, word, field, trajectory, site, outcome, since, until)."""
        out: dict = {}
        for _path, dirname, index, _time, _url, n in self._matching_states(pattern, LineFilter(**filters)):
            tid = self._by_dir[dirname].id if dirname in self._by_dir else dirname
            key = tid if by == "trajectory" else (tid, index)
            out[key] = out.get(key, 0) + n
        return out

    def timeline(
        self,
        pattern: str,
        *,
        value: str | None = None,
        changes: bool = False,
        limit: int | None = 2000,
        per_state: int | None = 1,
        **filters: Any,
    ) -> Hits:
        """Matching lines oldest first, each with .value: the pattern's first group, `value`'s, or the field value."""
        hits = self.grep(pattern, limit=limit, per_state=per_state, after=6, **filters)
        value_rx = re.compile(value) if value else None
        pattern_rx = _python_regex(pattern, filters)
        for h in hits:
            h["value"] = _hit_value(h, value_rx, pattern_rx)
        return _only_changes(hits) if changes else hits

    def latest(self, pattern: str, **filters: Any) -> Record | None:
        """The most recent matching line (with .value, as in timeline), or None."""
        found = self.grep(pattern, limit=1, sort="newest", after=6, **filters)
        if not found:
            return None
        hit = found[0]
        hit["value"] = _hit_value(hit, None, _python_regex(pattern, filters))
        return hit

    def find_value(self, label: str, *, changes: bool = False, **filters: Any) -> Hits:
        """Values shown next to a label across the store, oldest first (hits with .value; None when not found)."""
        filters.setdefault("field", "text")
        filters.setdefault("ignore_case", True)
        hits = self.grep(label, after=6, per_state=filters.pop("per_state", 1), **filters)
        label_rx = _python_regex(label, filters) or re.compile(re.escape(label), re.I)
        for h in hits:
            h["value"] = _value_near(h.line, h.get("after", []), label_rx)
        found = Hits([h for h in hits if h.value is not None], hits.total, hits.states, hits.truncated)
        return _only_changes(found) if changes else found


def trajectory_names(trajectory: Any) -> list[str]:
    """The ids, folder names or globs a trajectory filter names: a name, names separated by commas (a tool call
    gives one string), or a list of either."""
    given = [trajectory] if isinstance(trajectory, str) else list(trajectory)
    return [name.strip() for item in given for name in str(item).split(",") if name.strip()]
