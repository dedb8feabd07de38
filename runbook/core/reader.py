"""A runbook store read from Python, read-only: catalog rows, state files, and ripgrep over them in time order.
`rbk` (the module the agent imports in the sandbox) is this reader's default instance as module functions."""

from __future__ import annotations

import fnmatch
import os
import re
import subprocess

from .catalog import connect_readonly
from .filters import as_set, field_list, outcome_matches
from .layout import CATALOG_FILE, STATE_GLOB, SUMMARIES_DIR, TRAJECTORIES_DIR, state_relpath
from .records import Hits, RbkError, Record
from .ripgrep import _anchored, _field_of, _parse_rg_json, _pattern_body, _python_regex, ripgrep_binary
from .statefile import FIELDS, HEADER_FIELDS, parse_state, read_header
from .values import _hit_value, _only_changes, _value_near

SORTS = ("time", "newest", "count")


def default_store_dir() -> str:
    """The store folder: env RUNBOOK_STORE_DIR, else /store."""
    return os.environ.get("RUNBOOK_STORE_DIR") or "/store"


class StoreReader:
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
        self._by_id: dict = {}
        self._by_dir: dict = {}
        self._state_meta: dict | None = None

    # -- catalog -------------------------------------------------------------------------------------------------
    def _load(self) -> None:
        if self._rows is not None:
            return
        conn = connect_readonly(self.catalog_path)
        try:
            rows = conn.execute(
                "SELECT seq, id, dir, site, domain, goal, start_url, outcome, success, n_states, n_errors, "
                "first_ts, last_ts FROM trajectories ORDER BY seq"
            ).fetchall()
        finally:
            conn.close()
        records = []
        for seq, tid, dirname, site, domain, goal, start_url, outcome, success, n_states, n_errors, first, last in rows:
            records.append(
                Record(
                    id=tid,
                    seq=seq,
                    site=site or "",
                    domain=domain or "",
                    goal=goal or "",
                    start_url=start_url or "",
                    outcome=outcome,
                    success=None if success is None else bool(success),
                    n_states=n_states,
                    n_errors=n_errors,
                    first_time=first,
                    last_time=last,
                    dir=dirname,
                )
            )
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

    def trajectories(self, site=None, outcome=None, goal: str | None = None) -> list:
        """Catalog rows (id, site, goal, outcome, success, n_states, first_time, ...), oldest first; goal is a regex."""
        self._load()
        sites = as_set(site)
        goal_rx = re.compile(goal, re.I) if goal else None
        return [
            r
            for r in self._rows
            if (not sites or r.site in sites)
            and outcome_matches(r, outcome)
            and (goal_rx is None or goal_rx.search(r.goal))
        ]

    def trajectory(self, trajectory_id: str) -> Record:
        """One catalog row by id (a unique prefix also works)."""
        self._load()
        if trajectory_id in self._by_id:
            return self._by_id[trajectory_id]
        starts = [r for r in self._rows if r.id.startswith(trajectory_id)]
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
        with open(path, encoding="utf-8", errors="replace") as fh:
            fields, text, n_header = parse_state(fh.read())
        return Record(
            trajectory=rec.id,
            index=index,
            n_states=rec.n_states,
            time=fields.get("time") or None,
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

    def states(self, trajectory_id: str) -> list:
        """Every state of one trajectory, in order (see state())."""
        rec = self.trajectory(trajectory_id)
        return [self.state(rec.id, i) for i in range(rec.n_states)]

    def errors(self, site=None, trajectory=None, outcome=None) -> list:
        """States whose action raised an error, oldest first: {trajectory, state, time, url, action, error}."""
        out = []
        for h in self.grep(r"\S", field="error", site=site, trajectory=trajectory, outcome=outcome, limit=None):
            st = self.state(h.trajectory, h.state)
            out.append(
                Record(trajectory=h.trajectory, state=h.state, time=h.time, url=h.url, action=st.action, error=st.error)
            )
        return out

    # -- search --------------------------------------------------------------------------------------------------
    def _scope_paths(self, trajectory=None, site=None, outcome=None) -> list | None:
        """State folders to search (store-relative), or None for all."""
        if trajectory is None and site is None and outcome is None:
            return None
        self._load()
        rows = self.trajectories(site=site, outcome=outcome)
        if trajectory is not None:
            wanted = [trajectory] if isinstance(trajectory, str) else list(trajectory)
            keep = []
            for r in rows:
                if any(r.id == w or r.dir == w or fnmatch.fnmatchcase(r.id, w) for w in wanted):
                    keep.append(r)
            if not keep and len(wanted) == 1 and not any(c in wanted[0] for c in "*?["):
                keep = [r for r in rows if r.id == self.trajectory(wanted[0]).id]
            rows = keep
        return [f"trajectories/{r.dir}/states" for r in rows]

    def _start_rg(self, args: list, paths: list | None, glob: str | None = STATE_GLOB) -> subprocess.Popen:
        cmd = [ripgrep_binary(), "--no-config", "--no-ignore", *args] + (["-g", glob] if glob else []) + ["--"]
        cmd += paths if paths is not None else [TRAJECTORIES_DIR]
        return subprocess.Popen(cmd, cwd=self.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    @staticmethod
    def _finish_rg(proc: subprocess.Popen) -> str:
        out, err = proc.communicate()
        if proc.returncode == 2 and not out:
            raise RbkError(f"ripgrep failed: {err.decode('utf-8', 'replace').strip()[-600:]}")
        return out.decode("utf-8", "replace")

    def _run_rg(self, args: list, paths: list | None, glob: str | None = STATE_GLOB) -> str:
        return self._finish_rg(self._start_rg(args, paths, glob))

    def _start_count(self, regex: str, ignore_case: bool, paths: list | None):
        if paths == []:
            return None
        return self._start_rg(["--count", "--null", "-e", regex] + (["-i"] if ignore_case else []), paths)

    def _finish_count(self, proc) -> dict:
        counts = {}
        if proc is not None:
            for line in self._finish_rg(proc).splitlines():
                path, _, n = line.partition("\0")
                if n:
                    counts[path] = int(n)
        return counts

    def _state_counts(self, pattern, ignore_case, fixed, word, field, paths) -> dict:
        """Store-relative state path -> matching lines, restricted to the fields asked for."""
        fields = field_list(field)
        body = _pattern_body(pattern, fixed, word)
        others = [f for f in HEADER_FIELDS if f not in fields]
        main = self._start_count(body if "text" in fields else _anchored(body, fields), ignore_case, paths)
        self._meta()  # load the catalog while ripgrep runs
        counts = self._finish_count(main)
        if "text" not in fields or not others or not counts:
            return counts
        # ripgrep has no look-around: for the page text, count all lines, then take away the header lines of the
        # other fields, counted again in the matching files only (few, for the rare terms searched most)
        files = sorted(counts) if len(counts) <= 2000 else paths
        header = self._finish_count(self._start_count(_anchored(body, others), ignore_case, files))
        return {p: n - header.get(p, 0) for p, n in counts.items() if n - header.get(p, 0) > 0}

    def _ordered(self, counts: dict, sort: str, since, until) -> list:
        """[(path, dir, index, time, url, n)] in the order asked for, within [since, until]."""
        meta = self._meta()
        items = []
        for path, n in counts.items():
            parts = path.split("/")
            if len(parts) != 4 or not parts[3][:-3].isdigit():
                continue
            key = (parts[1], int(parts[3][:-3]))
            time, url = meta.get(key, ("", ""))
            if (since and time < since) or (until and time[: len(until)] > until):
                continue
            rec = self._by_dir.get(key[0])
            items.append((path, key[0], key[1], time, url, n, rec.seq if rec else 0))
        items.sort(key=lambda it: (it[3], it[6], it[2]))
        if sort == "newest":
            items.reverse()
        elif sort == "count":
            items.sort(key=lambda it: -it[5])
        return [it[:6] for it in items]

    def search(
        self,
        pattern: str,
        *,
        ignore_case=False,
        fixed=False,
        word=False,
        field=None,
        trajectory=None,
        site=None,
        outcome=None,
        since=None,
        until=None,
        per_state=None,
        limit=200,
        sort="time",
        before=0,
        after=0,
    ) -> Record:
        """The engine behind grep/search: {hits, total_lines, total_states, total_trajectories, truncated}."""
        if sort not in SORTS:
            raise RbkError(f"sort must be one of {', '.join(SORTS)}, not {sort!r}")
        paths = self._scope_paths(trajectory, site, outcome)
        counts = self._state_counts(pattern, ignore_case, fixed, word, field, paths)
        ordered = self._ordered(counts, sort, since, until)
        chosen, budget = [], limit
        for item in ordered:
            if budget is not None and budget <= 0:
                break
            take = item[5] if per_state is None else min(item[5], per_state)
            if budget is not None:
                take = min(take, budget)
                budget -= take
            chosen.append((item, take))
        hits = self._read_hits(pattern, ignore_case, fixed, word, field, chosen, before, after)
        total = sum(it[5] for it in ordered)
        return Record(
            hits=hits,
            total_lines=total,
            total_states=len(ordered),
            total_trajectories=len({it[1] for it in ordered}),
            shown=len(hits),
            truncated=len(hits) < total,
        )

    def _read_hits(self, pattern, ignore_case, fixed, word, field, chosen, before, after) -> list:
        if not chosen:
            return []
        fields = field_list(field)
        body = _pattern_body(pattern, fixed, word)
        regex = body if "text" in fields else _anchored(body, fields)
        slack = 0 if "text" not in fields or len(fields) == len(FIELDS) else len(HEADER_FIELDS)
        most = max(take for _, take in chosen) + slack
        args = ["--json", "-m", str(most), "-e", regex] + (["-i"] if ignore_case else [])
        if before:
            args += ["-B", str(before)]
        if after:
            args += ["-A", str(after)]
        lines_by_path = _parse_rg_json(self._run_rg(args, [item[0] for item, _ in chosen]))
        hits = []
        for (path, dirname, index, time, url, n), take in chosen:
            for hit in self._hits_of_file(
                path, dirname, index, time, url, lines_by_path.get(path, {}), fields, take, before, after
            ):
                hit["state_lines"] = n
                hits.append(hit)
        return hits

    def _hits_of_file(self, path, dirname, index, time, url, lines, fields, take, before, after) -> list:
        rec = self._by_dir.get(dirname)
        n_header = self._header_lines(path)
        out = []
        for ln in sorted(lines):
            text, is_match, spans = lines[ln]
            if not is_match:
                continue
            field = _field_of(text, ln, n_header)
            if field not in fields:
                continue
            lead = len(text) - len(text.lstrip())
            hit = Record(
                trajectory=rec.id if rec else dirname,
                state=index,
                time=time or None,
                url=url,
                site=rec.site if rec else "",
                field=field,
                line_number=ln,
                line=text.strip(),
                spans=[(a - lead, b - lead) for a, b in spans],
                path=path,
            )
            if before:
                hit["before"] = [lines[i][0].strip() for i in range(ln - before, ln) if i in lines]
            if after:
                hit["after"] = [lines[i][0].strip() for i in range(ln + 1, ln + after + 1) if i in lines]
            out.append(hit)
            if len(out) >= take:
                break
        return out

    def search_summaries(self, pattern: str, *, ignore_case=False, fixed=False, word=False, limit=50) -> Record:
        """Matching lines of summaries/ (the trajectory table and action sequences): {hits, total_lines, truncated}."""
        folder = os.path.join(self.root, SUMMARIES_DIR)
        files = sorted(f"{SUMMARIES_DIR}/{n}" for n in os.listdir(folder)) if os.path.isdir(folder) else []
        if not files:
            return Record(hits=[], total_lines=0, truncated=False)
        regex = _pattern_body(pattern, fixed, word)
        flags = ["-i"] if ignore_case else []
        counts = {
            p: int(n)
            for p, _, n in (
                line.partition("\0")
                for line in self._run_rg(["--count", "--null", "-e", regex] + flags, files, None).splitlines()
            )
            if n
        }
        lines = _parse_rg_json(self._run_rg(["--json", "-m", str(limit), "-e", regex] + flags, files, None))
        hits = []
        for path in files:
            owners = _summary_owners(os.path.join(self.root, path)) if path.endswith(".txt") else None
            for ln, (text, _is_match, spans) in sorted(lines.get(path, {}).items()):
                if len(hits) >= limit:
                    break
                owner = _owner_at(owners, ln) if owners else _tsv_id(text)
                lead = len(text) - len(text.lstrip())
                hits.append(
                    Record(
                        trajectory=owner,
                        state=None,
                        time=None,
                        url="",
                        site="",
                        field="summary",
                        line_number=ln,
                        line=text.strip(),
                        spans=[(a - lead, b - lead) for a, b in spans],
                        path=path,
                    )
                )
        total = sum(counts.values())
        return Record(hits=hits, total_lines=total, truncated=len(hits) < total)

    def _header_lines(self, rel_path: str) -> int:
        try:
            return read_header(os.path.join(self.root, rel_path))[1]
        except OSError:
            return len(HEADER_FIELDS) + 1

    def grep(
        self,
        pattern: str,
        *,
        limit: int | None = 2000,
        per_state: int | None = None,
        sort: str = "time",
        after: int = 0,
        **filters,
    ) -> Hits:
        """Matching lines oldest first (sort="newest": newest first, "count": busiest states first), at most limit."""
        found = self.search(pattern, limit=limit, per_state=per_state, sort=sort, after=after, **filters)
        for h in found.hits:
            h.pop("spans", None)
        return Hits(found.hits, found.total_lines, found.total_states, found.truncated)

    def count(
        self,
        pattern: str,
        *,
        by: str = "state",
        ignore_case=False,
        fixed=False,
        word=False,
        field=None,
        trajectory=None,
        site=None,
        outcome=None,
        since=None,
        until=None,
    ) -> dict:
        """Matching lines per state {(trajectory, state): n} (by="trajectory": {trajectory: n}), oldest first."""
        counts = self._state_counts(
            pattern, ignore_case, fixed, word, field, self._scope_paths(trajectory, site, outcome)
        )
        out: dict = {}
        for _path, dirname, index, _time, _url, n in self._ordered(counts, "time", since, until):
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
        **filters,
    ) -> Hits:
        """Matching lines oldest first, each with .value: the pattern's first group, `value`'s, or the field value."""
        hits = self.grep(pattern, limit=limit, per_state=per_state, after=6, **filters)
        value_rx = re.compile(value) if value else None
        pattern_rx = _python_regex(pattern, filters)
        for h in hits:
            h["value"] = _hit_value(h, value_rx, pattern_rx)
        return _only_changes(hits) if changes else hits

    def latest(self, pattern: str, **filters) -> Record | None:
        """The most recent matching line (with .value, as in timeline), or None."""
        found = self.grep(pattern, limit=1, sort="newest", after=6, **filters)
        if not found:
            return None
        hit = found[0]
        hit["value"] = _hit_value(hit, None, _python_regex(pattern, filters))
        return hit

    def find_value(self, label: str, *, changes: bool = False, **filters) -> Hits:
        """Values shown next to a label across the store, oldest first (hits with .value; None when not found)."""
        filters.setdefault("field", "text")
        filters.setdefault("ignore_case", True)
        hits = self.grep(label, after=6, per_state=filters.pop("per_state", 1), **filters)
        label_rx = _python_regex(label, filters) or re.compile(re.escape(label), re.I)
        for h in hits:
            h["value"] = _value_near(h.line, h.get("after", []), label_rx)
        found = Hits([h for h in hits if h.value is not None], hits.total, hits.states, hits.truncated)
        return _only_changes(found) if changes else found


def _summary_owners(path: str) -> list:
    """[(line number, trajectory id)] of the '## id | ...' headings of summaries/actions.txt."""
    owners = []
    with open(path, encoding="utf-8", errors="replace") as fh:
        for n, line in enumerate(fh, 1):
            if line.startswith("## "):
                owners.append((n, line[3:].split(" | ", 1)[0].strip()))
    return owners


def _owner_at(owners: list, line_number: int):
    import bisect

    at = bisect.bisect_right(owners, (line_number, "\uffff")) - 1
    return owners[at][1] if at >= 0 else None


def _tsv_id(line: str):
    cells = line.split("\t")
    return cells[1] if len(cells) > 2 and cells[0].isdigit() else None
