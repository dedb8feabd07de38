"""Ripgrep over a store's state files and summaries, in time order: the search half of StoreReader (runbook.core.
reader), which supplies the catalog (`_meta`, `_scope_paths`, `root`)."""

from __future__ import annotations

import os
import subprocess
from typing import Any

from .files import check_regular, open_regular
from .filters import LineFilter, field_list
from .layout import STATE_GLOB, SUMMARIES_DIR, TRAJECTORIES_DIR
from .records import RbkError, Record
from .ripgrep import _anchored, _field_of, _parse_rg_json, _pattern_body, ripgrep_binary
from .statefile import FIELDS, HEADER_FIELDS, read_header

SORTS = ("time", "newest", "count")


class RipgrepSearch:
    """Searching the state files with ripgrep; mixed into StoreReader, which supplies what is declared here."""

    root: str
    _by_dir: dict

    def _meta(self) -> dict:
        """(dir, index) -> (time, url) for every state."""
        raise NotImplementedError

    def _scope_paths(self, trajectory: Any = None, site: Any = None, outcome: Any = None) -> list | None:
        """State folders to search (store-relative), or None for all."""
        raise NotImplementedError

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

    def _start_count(self, regex: str, ignore_case: bool, paths: list | None) -> subprocess.Popen | None:
        if paths == []:
            return None
        return self._start_rg(["--count", "--null", "-e", regex] + (["-i"] if ignore_case else []), paths)

    def _finish_count(self, proc: subprocess.Popen | None) -> dict:
        counts = {}
        if proc is not None:
            for line in self._finish_rg(proc).splitlines():
                path, _, n = line.partition("\0")
                if n:
                    counts[path] = int(n)
        return counts

    def _state_counts(
        self, pattern: str, ignore_case: bool, fixed: bool, word: bool, field: Any, paths: list | None
    ) -> dict:
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

    def _ordered(self, counts: dict, sort: str, since: str | None, until: str | None) -> list:
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

    def _matching_states(self, pattern: str, match: LineFilter, sort: str = "time") -> list:
        """[(path, dir, index, time, url, matching lines)] of the states with a line `match` counts, `sort` order."""
        paths = self._scope_paths(match.trajectory, match.site, match.outcome)
        counts = self._state_counts(pattern, match.ignore_case, match.fixed, match.word, match.field, paths)
        return self._ordered(counts, sort, match.since, match.until)

    def search(
        self,
        pattern: str,
        *,
        per_state: int | None = None,
        limit: int | None = 200,
        sort: str = "time",
        before: int = 0,
        after: int = 0,
        **filters: Any,
    ) -> Record:
        """The engine behind grep/search: {hits, total_lines, total_states, total_trajectories, truncated};
        `filters` are LineFilter's (ignore_case, fixed, word, field, trajectory, site, outcome, since, until)."""
        if sort not in SORTS:
            raise RbkError(f"sort must be one of {', '.join(SORTS)}, not {sort!r}")
        match = LineFilter(**filters)
        ordered = self._matching_states(pattern, match, sort)
        chosen, budget = [], limit
        for item in ordered:
            if budget is not None and budget <= 0:
                break
            take = item[5] if per_state is None else min(item[5], per_state)
            if budget is not None:
                take = min(take, budget)
                budget -= take
            chosen.append((item, take))
        hits = self._read_hits(pattern, match, chosen, before, after)
        total = sum(it[5] for it in ordered)
        return Record(
            hits=hits,
            total_lines=total,
            total_states=len(ordered),
            total_trajectories=len({it[1] for it in ordered}),
            shown=len(hits),
            truncated=len(hits) < total,
        )

    def _read_hits(self, pattern: str, match: LineFilter, chosen: list, before: int, after: int) -> list:
        if not chosen:
            return []
        fields = field_list(match.field)
        body = _pattern_body(pattern, match.fixed, match.word)
        regex = body if "text" in fields else _anchored(body, fields)
        slack = 0 if "text" not in fields or len(fields) == len(FIELDS) else len(HEADER_FIELDS)
        most = max(take for _, take in chosen) + slack
        args = ["--json", "-m", str(most), "-e", regex] + (["-i"] if match.ignore_case else [])
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

    def _hits_of_file(
        self,
        path: str,
        dirname: str,
        index: int,
        time: str,
        url: str,
        lines: dict,
        fields: tuple,
        take: int,
        before: int,
        after: int,
    ) -> list:
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

    def search_summaries(
        self, pattern: str, *, ignore_case: bool = False, fixed: bool = False, word: bool = False, limit: int = 50
    ) -> Record:
        """Matching lines of summaries/ (the trajectory table and action sequences): {hits, total_lines, truncated}."""
        folder = os.path.join(self.root, SUMMARIES_DIR)
        files = sorted(f"{SUMMARIES_DIR}/{n}" for n in os.listdir(folder)) if os.path.isdir(folder) else []
        files = [path for path in files if _regular(os.path.join(self.root, path))]  # rg would wait on a FIFO
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
        hits: list[Record] = []
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


def _regular(path: str) -> bool:
    try:
        check_regular(path)
        return True
    except OSError:
        return False


def _summary_owners(path: str) -> list:
    """[(line number, trajectory id)] of the '## id | ...' headings of summaries/actions.txt."""
    owners = []
    with open_regular(path, encoding="utf-8", errors="replace") as fh:
        for n, line in enumerate(fh, 1):
            if line.startswith("## "):
                owners.append((n, line[3:].split(" | ", 1)[0].strip()))
    return owners


def _owner_at(owners: list, line_number: int) -> str | None:
    import bisect

    at = bisect.bisect_right(owners, (line_number, "\uffff")) - 1
    return owners[at][1] if at >= 0 else None


def _tsv_id(line: str) -> str | None:
    cells = line.split("\t")
    return cells[1] if len(cells) > 2 and cells[0].isdigit() else None
