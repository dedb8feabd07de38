"""rbk: read a runbook store from Python: trajectories, states, grep in time order, values of page fields.

The store (env RUNBOOK_STORE_DIR, default /store) holds web-agent trajectories. Each trajectory is a goal and a
list of states; state i is the page the agent saw (url, title, page text = accessibility tree or DOM text) and the
action it took next (with the error that action raised, if any, and the agent's thought). Every state has a time:
when values change over time, the most recent state holds the current value.

Everything returned is a plain dict whose keys are also attributes (h.url == h["url"]), so it prints short and
dumps to JSON as is. Patterns of grep/count/latest/timeline/find_value are ripgrep (Rust) regexes, case-sensitive
unless ignore_case=True; fixed=True takes the pattern literally.

Examples:
    import rbk
    rbk.trajectories(site="gitlab", outcome="failure")    # catalog rows, oldest first: id, site, goal, outcome, ...
    t = rbk.trajectory("wa-gitlab-452"); print(t.goal, t.n_states, t.first_time)
    s = rbk.state("wa-gitlab-452", 3); print(s.time, s.url, s.action, s.error); print(s.text[:2000])
    for s in rbk.states("wa-gitlab-452"): print(s.index, s.time, s.action)
    for h in rbk.grep(r"Website url", field="text", site="gitlab"):    # every matching line, oldest first
        print(h.time, h.trajectory, h.state, h.line)
    rbk.count(r"Lumaflex")                       # {(trajectory, state): matching lines}, oldest first
    h = rbk.latest(r"textbox 'Website url'")     # the most recent matching line (or None), with h.value
    for h in rbk.timeline(r"textbox 'Website url'", changes=True):  # how a value changed, oldest first
        print(h.time, h.trajectory, h.state, h.value, h.seen, h.last_seen)   # seen: sightings until the next change
    rbk.timeline(r"Website url' value='([^']*)", site="gitlab")   # a capture group picks the value
    rbk.find_value(r"Grand Total", site="shopping")   # values shown next to a label, oldest first
    rbk.find_value(r"To-Do List", changes=True)  # a badge count under a link: only the changes
    rbk.values(s.text, r"Website url")           # the same on one page text, no store needed
    rbk.errors(site="gitlab")                    # states whose action raised an error, oldest first

A hit is {trajectory, state, time, url, site, field, line_number, line, path} (+ value, after): field is the header
field (url, title, action, error, thought, ...) or "text" for the page text; line_number counts lines of the state
file (trajectories/<dir>/states/NNNN.md, header first); line is stripped of its indentation.
Filters taken by grep, count, latest, timeline, find_value: trajectory (id, glob or list), site, outcome
("success", "failure"), field (name or list), since/until (ISO time prefixes), ignore_case, fixed, word.
Use rbk.Store(path) for a store other than the default one; it has the same functions as methods.
"""
from __future__ import annotations

import base64
import fnmatch
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys

# what help(rbk) documents; Record (the dict type of results) and RbkError are importable too
__all__ = ["trajectories", "trajectory", "states", "state", "grep", "count", "latest", "timeline", "find_value",
           "values", "errors", "Store"]

HEADER_FIELDS = ("trajectory", "state", "time", "url", "title", "action", "error", "thought", "screenshot")
HEADER_END = "---"
NEWLINE_MARK = " ⏎ "
FIELDS = HEADER_FIELDS + ("text",)
STATE_GLOB = "**/states/*.md"
SORTS = ("time", "newest", "count")
_RG_META = set("\\.+*?()|[]{}^$")


class RbkError(Exception):
    """A request the store cannot answer; the message says what to change."""


class Record(dict):
    """A dict whose keys are also attributes; prints long strings cut short (the full value stays inside)."""

    __slots__ = ()

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __repr__(self) -> str:
        parts = []
        for key, value in self.items():
            if isinstance(value, str) and len(value) > 160:
                value = f"{value[:150]}…(+{len(value) - 150} chars)"
            elif isinstance(value, list) and len(value) > 8:
                value = f"[{len(value)} items]"
            parts.append(f"{key}={value!r}")
        return "{" + ", ".join(parts) + "}"


class Hits(list):
    """A list of hits that also says how many lines matched in all (`total`) and whether some were left out."""

    def __init__(self, items=(), total: int = 0, states: int = 0, truncated: bool = False):
        super().__init__(items)
        self.total = total
        self.states = states
        self.truncated = truncated


# -- locating things -------------------------------------------------------------------------------------------
def default_store_dir() -> str:
    """The store folder: env RUNBOOK_STORE_DIR, else /store."""
    return os.environ.get("RUNBOOK_STORE_DIR") or "/store"


def ripgrep_binary() -> str:
    """ripgrep's path: env RUNBOOK_RG, one installed beside this Python, or the one on PATH."""
    if os.environ.get("RUNBOOK_RG"):
        return os.environ["RUNBOOK_RG"]
    for python in (sys.executable, os.path.realpath(sys.executable)):
        sibling = os.path.join(os.path.dirname(python), "rg")
        if python and os.access(sibling, os.X_OK):
            return sibling  # avoids version-manager shims, which cost ~100 ms per call
    found = shutil.which("rg")
    if not found:
        raise RbkError("ripgrep (rg) is not on PATH: install it (apt-get install ripgrep / pip install ripgrep) "
                       "or set RUNBOOK_RG to its path")
    return found


def escape_regex(text: str) -> str:
    """A ripgrep regex matching `text` literally."""
    return "".join("\\" + ch if ch in _RG_META else ch for ch in text)


def _connect_readonly(path: str) -> sqlite3.Connection:
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


def read_header(path: str) -> tuple[dict, int]:
    """(header fields, number of header lines incl. '---') of a state file, reading only the header."""
    fields: dict = {}
    n = 0
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            n += 1
            line = line.rstrip("\n")
            if line == HEADER_END:
                return fields, n
            key, _, value = line.partition(": ")
            fields[key.strip()] = value.replace(NEWLINE_MARK, "\n")
    return fields, 0


def parse_state_text(text: str) -> tuple[dict, str, int]:
    """(header fields, page text, number of header lines incl. '---') of a state file's content."""
    head, sep, body = text.partition(f"\n{HEADER_END}\n")
    if not sep:
        return {}, text, 0
    fields = {}
    for line in head.splitlines():
        key, _, value = line.partition(": ")
        fields[key.strip()] = value.replace(NEWLINE_MARK, "\n")
    return fields, body, head.count("\n") + 2


# -- value extraction ------------------------------------------------------------------------------------------
_VALUE_QUOTED = re.compile(r"""\b(?:value|checked|aria-checked)=(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)")""")
_VALUE_DOM = re.compile(r"\b(?:value|checked|aria-checked)=(?!['\"])(.*?)(?=\s+[\w-]+=|\s*/?>|$)")
_AX_NAME = re.compile(r"^(?:\*?\[[\w-]+\]\s*)?([A-Za-z]+)\s+'(.*?)'(?=\s+\w+=|,|\s*$)")
_DOM_TAG = re.compile(r"^(?:\|[A-Z]+\([a-z]+\)\|)*\*?(?:\[\d+\])?<[^>]*>\s*$")
INPUT_ROLES = {"textbox", "searchbox", "spinbutton", "checkbox", "radio", "switch", "slider"}


def _line_value_attr(line: str) -> str | None:
    """The value (or checked state) attribute of an input on this line, if any."""
    m = _VALUE_QUOTED.search(line)
    if m:
        return m.group(1) if m.group(1) is not None else m.group(2)
    m = _VALUE_DOM.search(line)
    return m.group(1).strip() if m else None


def _line_role_name(line: str) -> tuple[str, str]:
    """(role, visible text) of a page line: an accessibility-tree node, a DOM tag (no text), or plain text."""
    line = line.strip()
    m = _AX_NAME.match(line)
    if m:
        return m.group(1), m.group(2).strip()
    if _DOM_TAG.match(line):
        return "", ""
    return "", line


def _cuts_word(text: str, start: int, end: int) -> bool:
    """Whether text[start:end] begins or ends in the middle of a word."""
    inside_start = 0 < start < len(text) and text[start - 1].isalnum() and text[start].isalnum()
    inside_end = 0 < end < len(text) and text[end - 1].isalnum() and text[end].isalnum()
    return inside_start or inside_end


def _value_near(line: str, after: list[str], label: re.Pattern | None) -> str | None:
    """The value a page shows for a labelled line (best effort); see _value_and_source."""
    return _value_and_source(line, after, label)[0]


def _value_and_source(line: str, after: list[str], label: re.Pattern | None) -> tuple[str | None, int]:
    """(value, 0 if it is on the line itself or k if on the k-th next line).

    In order: the line's value/checked attribute; an empty input ("" for a textbox with no value); the text after
    the label on the same line ('Order Total: $5'); else the first following line with an attribute value or text.
    """
    attr = _line_value_attr(line)
    if attr is not None:
        return attr, 0
    role, name = _line_role_name(line)
    if role in INPUT_ROLES:
        return "", 0
    if label is not None:
        m = label.search(name)
        if m:
            if _cuts_word(name, m.start(), m.end()):
                return None, 0  # 'Full name' inside 'Display full names' is not that field
            rest = name[m.end():].lstrip(" :=\t-–")
            if rest:
                return rest, 0
    elif name:
        return name, 0
    for k, nxt in enumerate(after, 1):
        attr = _line_value_attr(nxt)
        if attr is not None:
            return attr, k
        text = _line_role_name(nxt)[1]
        if text and text != name and re.search(r"\w", text) and not (label is not None and label.fullmatch(text)):
            return text, k
    return None, 0


def values(text: str, label: str, *, ignore_case: bool = True, lookahead: int = 6) -> list[str]:
    """Values shown next to a label in one page text, in page order (a value attribute, 'Label: v', or next text)."""
    rx = re.compile(label, re.I if ignore_case else 0)
    lines = text.splitlines()
    found, used = [], set()
    for i, line in enumerate(lines):
        if i in used or not rx.search(line):
            continue
        value, k = _value_and_source(line, lines[i + 1:i + 1 + lookahead], rx)
        if value is not None:
            found.append(value)
            used.add(i + k)  # a label line and the input below it that repeats the label show one value
    return found


# -- the store -------------------------------------------------------------------------------------------------
class Store:
    """One store on disk, read-only: catalog rows, state files, and ripgrep over them."""

    def __init__(self, root: str | None = None):
        self.root = os.path.abspath(root or default_store_dir())
        self.catalog_path = os.path.join(self.root, "catalog.sqlite")
        if not os.path.isfile(self.catalog_path):
            raise RbkError(f"no runbook store at {self.root} (no catalog.sqlite): pass --store DIR or set "
                           "RUNBOOK_STORE_DIR to the store folder")
        self._rows: list | None = None
        self._by_id: dict = {}
        self._by_dir: dict = {}
        self._state_meta: dict | None = None

    # -- catalog -------------------------------------------------------------------------------------------------
    def _load(self) -> None:
        if self._rows is not None:
            return
        conn = _connect_readonly(self.catalog_path)
        try:
            rows = conn.execute(
                "SELECT seq, id, dir, site, domain, goal, start_url, outcome, success, n_states, n_errors, "
                "first_ts, last_ts FROM trajectories ORDER BY seq").fetchall()
        finally:
            conn.close()
        records = []
        for seq, tid, dirname, site, domain, goal, start_url, outcome, success, n_states, n_errors, first, last in rows:
            records.append(Record(id=tid, seq=seq, site=site or "", domain=domain or "", goal=goal or "",
                                  start_url=start_url or "", outcome=outcome,
                                  success=None if success is None else bool(success), n_states=n_states,
                                  n_errors=n_errors, first_time=first, last_time=last, dir=dirname))
        records.sort(key=lambda r: (r.first_time or "", r.seq))
        self._rows = records
        self._by_id = {r.id: r for r in records}
        self._by_dir = {r.dir: r for r in records}

    def _meta(self) -> dict:
        """(dir, index) -> (time, url) for every state, from the catalog."""
        if self._state_meta is None:
            self._load()
            conn = _connect_readonly(self.catalog_path)
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
        sites = _as_set(site)
        goal_rx = re.compile(goal, re.I) if goal else None
        return [r for r in self._rows
                if (not sites or r.site in sites) and _outcome_matches(r, outcome)
                and (goal_rx is None or goal_rx.search(r.goal))]

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
        return os.path.join(self.root, "trajectories", rec.dir, "states", f"{index:04d}.md")

    def state(self, trajectory_id: str, index: int) -> Record:
        """One state: trajectory, index, n_states, time, url, title, action, error, thought, screenshot, text, path."""
        rec = self.trajectory(trajectory_id)
        if index < 0:
            index += rec.n_states
        path = self.state_path(rec.id, index)
        with open(path, encoding="utf-8", errors="replace") as fh:
            fields, text, n_header = parse_state_text(fh.read())
        return Record(trajectory=rec.id, index=index, n_states=rec.n_states, time=fields.get("time") or None,
                      url=fields.get("url", ""), title=fields.get("title", ""), action=fields.get("action", ""),
                      error=fields.get("error", ""), thought=fields.get("thought", ""),
                      screenshot=fields.get("screenshot", ""), text=text, header_lines=n_header,
                      path=os.path.relpath(path, self.root))

    def states(self, trajectory_id: str) -> list:
        """Every state of one trajectory, in order (see state())."""
        rec = self.trajectory(trajectory_id)
        return [self.state(rec.id, i) for i in range(rec.n_states)]

    def errors(self, site=None, trajectory=None, outcome=None) -> list:
        """States whose action raised an error, oldest first: {trajectory, state, time, url, action, error}."""
        out = []
        for h in self.grep(r"\S", field="error", site=site, trajectory=trajectory, outcome=outcome,
                           limit=None):
            st = self.state(h.trajectory, h.state)
            out.append(Record(trajectory=h.trajectory, state=h.state, time=h.time, url=h.url, action=st.action,
                              error=st.error))
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
        cmd += paths if paths is not None else ["trajectories"]
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
        fields = _field_list(field)
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
            if (since and time < since) or (until and time[:len(until)] > until):
                continue
            rec = self._by_dir.get(key[0])
            items.append((path, key[0], key[1], time, url, n, rec.seq if rec else 0))
        items.sort(key=lambda it: (it[3], it[6], it[2]))
        if sort == "newest":
            items.reverse()
        elif sort == "count":
            items.sort(key=lambda it: -it[5])
        return [it[:6] for it in items]

    def search(self, pattern: str, *, ignore_case=False, fixed=False, word=False, field=None, trajectory=None,
               site=None, outcome=None, since=None, until=None, per_state=None, limit=200, sort="time",
               before=0, after=0) -> Record:
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
        return Record(hits=hits, total_lines=total, total_states=len(ordered),
                      total_trajectories=len({it[1] for it in ordered}), shown=len(hits),
                      truncated=len(hits) < total)

    def _read_hits(self, pattern, ignore_case, fixed, word, field, chosen, before, after) -> list:
        if not chosen:
            return []
        fields = _field_list(field)
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
            for hit in self._hits_of_file(path, dirname, index, time, url, lines_by_path.get(path, {}), fields,
                                          take, before, after):
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
            hit = Record(trajectory=rec.id if rec else dirname, state=index, time=time or None, url=url,
                         site=rec.site if rec else "", field=field, line_number=ln, line=text.strip(),
                         spans=[(a - lead, b - lead) for a, b in spans], path=path)
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
        folder = os.path.join(self.root, "summaries")
        files = sorted(f"summaries/{n}" for n in os.listdir(folder)) if os.path.isdir(folder) else []
        if not files:
            return Record(hits=[], total_lines=0, truncated=False)
        regex = _pattern_body(pattern, fixed, word)
        flags = ["-i"] if ignore_case else []
        counts = {p: int(n) for p, _, n in (line.partition("\0") for line in
                                            self._run_rg(["--count", "--null", "-e", regex] + flags, files, None)
                                            .splitlines()) if n}
        lines = _parse_rg_json(self._run_rg(["--json", "-m", str(limit), "-e", regex] + flags, files, None))
        hits = []
        for path in files:
            owners = _summary_owners(os.path.join(self.root, path)) if path.endswith(".txt") else None
            for ln, (text, _is_match, spans) in sorted(lines.get(path, {}).items()):
                if len(hits) >= limit:
                    break
                owner = _owner_at(owners, ln) if owners else _tsv_id(text)
                lead = len(text) - len(text.lstrip())
                hits.append(Record(trajectory=owner, state=None, time=None, url="", site="", field="summary",
                                   line_number=ln, line=text.strip(), spans=[(a - lead, b - lead) for a, b in spans],
                                   path=path))
        total = sum(counts.values())
        return Record(hits=hits, total_lines=total, truncated=len(hits) < total)

    def _header_lines(self, rel_path: str) -> int:
        try:
            return read_header(os.path.join(self.root, rel_path))[1]
        except OSError:
            return len(HEADER_FIELDS) + 1

    def grep(self, pattern: str, *, limit: int | None = 2000, per_state: int | None = None, sort: str = "time",
             after: int = 0, **filters) -> Hits:
        """Matching lines oldest first (sort="newest": newest first, "count": busiest states first), at most limit."""
        found = self.search(pattern, limit=limit, per_state=per_state, sort=sort, after=after, **filters)
        for h in found.hits:
            h.pop("spans", None)
        return Hits(found.hits, found.total_lines, found.total_states, found.truncated)

    def count(self, pattern: str, *, by: str = "state", ignore_case=False, fixed=False, word=False, field=None,
              trajectory=None, site=None, outcome=None, since=None, until=None) -> dict:
        """Matching lines per state {(trajectory, state): n} (by="trajectory": {trajectory: n}), oldest first."""
        counts = self._state_counts(pattern, ignore_case, fixed, word, field,
                                    self._scope_paths(trajectory, site, outcome))
        out: dict = {}
        for _path, dirname, index, _time, _url, n in self._ordered(counts, "time", since, until):
            tid = self._by_dir[dirname].id if dirname in self._by_dir else dirname
            key = tid if by == "trajectory" else (tid, index)
            out[key] = out.get(key, 0) + n
        return out

    def timeline(self, pattern: str, *, value: str | None = None, changes: bool = False, limit: int | None = 2000,
                 per_state: int | None = 1, **filters) -> Hits:
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


# -- helpers ---------------------------------------------------------------------------------------------------
def _as_set(value) -> set:
    if value is None:
        return set()
    if isinstance(value, str):
        return {v.strip() for v in value.split(",") if v.strip()}
    return set(value)


def _outcome_matches(row: Record, outcome) -> bool:
    if not outcome:
        return True
    want = str(outcome).lower()
    if want in ("success", "succeeded", "pass", "passed"):
        return row.success is True
    if want in ("failure", "failed", "fail"):
        return row.success is False
    return want in (row.outcome or "").lower()


def _field_list(field) -> tuple:
    if field is None:
        return FIELDS
    chosen = [field] if isinstance(field, str) else list(field)
    chosen = [f.strip() for part in chosen for f in part.split(",") if f.strip()]
    bad = [f for f in chosen if f not in FIELDS]
    if bad:
        raise RbkError(f"unknown field {', '.join(bad)}: use any of {', '.join(FIELDS)}")
    return tuple(chosen)


def _pattern_body(pattern: str, fixed: bool, word: bool) -> str:
    body = escape_regex(pattern) if fixed else pattern
    return rf"\b(?:{body})\b" if word else body


def _anchored(body: str, fields) -> str:
    """A regex matching `body` only on the header lines of `fields`."""
    names = "|".join(fields)  # case-sensitive even under -i, so that page lines like 'Error: ...' stay out
    if body.startswith("^"):
        return f"^(?-i:{names}): (?:{body[1:]})"
    return f"^(?-i:{names}): .*?(?:{body})"


def _field_of(text: str, line_number: int, n_header: int) -> str:
    if n_header and line_number < n_header:
        return text.partition(": ")[0].strip() or "text"
    return "text"


def _decode(obj: dict) -> str:
    if "text" in obj:
        return obj["text"]
    return base64.b64decode(obj.get("bytes", "")).decode("utf-8", "replace")


def _parse_rg_json(output: str) -> dict:
    """path -> {line_number: (text, is_match, [(start, end) char spans])} from `rg --json` output."""
    by_path: dict = {}
    for raw in output.splitlines():
        if not raw.startswith('{"type":"match"') and not raw.startswith('{"type":"context"'):
            continue
        msg = json.loads(raw)
        data = msg["data"]
        path = _decode(data["path"])
        text = _decode(data["lines"]).rstrip("\n")
        spans = []
        if msg["type"] == "match":
            encoded = text.encode("utf-8")
            for sub in data.get("submatches", []):
                start = len(encoded[:sub["start"]].decode("utf-8", "replace"))
                end = len(encoded[:sub["end"]].decode("utf-8", "replace"))
                spans.append((start, end))
        by_path.setdefault(path, {})[data["line_number"]] = (text, msg["type"] == "match", spans)
    return by_path


def _python_regex(pattern: str, filters: dict):
    """The pattern as a Python regex when it compiles as one (ripgrep's syntax is close), else None."""
    flags = re.I if filters.get("ignore_case") else 0
    body = re.escape(pattern) if filters.get("fixed") else pattern
    try:
        return re.compile(body, flags)
    except re.error:
        return None


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


def _only_changes(hits: Hits) -> Hits:
    """The first hit of each run of equal values, with the run's `seen` count and `last_seen` time."""
    kept: list = []
    for h in hits:
        if kept and kept[-1].value == h.value:
            kept[-1]["seen"] += 1
            kept[-1]["last_seen"] = h.time
        else:
            h["seen"], h["last_seen"] = 1, h.time
            kept.append(h)
    return Hits(kept, hits.total, hits.states, hits.truncated)


def _hit_value(hit: Record, value_rx, pattern_rx):
    line = hit.line
    if value_rx is not None:
        m = value_rx.search(line)
        return (m.group(1) if m.groups() else m.group(0)) if m else None
    if pattern_rx is not None and pattern_rx.groups:
        m = pattern_rx.search(line)
        if m:
            return next((g for g in m.groups() if g is not None), m.group(0))
    if hit.field != "text":
        return line.partition(": ")[2]
    return _value_near(line, hit.get("after", []), pattern_rx)


# -- the default store, as module functions --------------------------------------------------------------------
_default: Store | None = None


def _store() -> Store:
    global _default
    if _default is None or _default.root != os.path.abspath(default_store_dir()):
        _default = Store()
    return _default


def trajectories(site=None, outcome=None, goal=None) -> list:
    """Catalog rows (id, site, goal, outcome, success, n_states, first_time, last_time, ...), oldest first."""
    return _store().trajectories(site=site, outcome=outcome, goal=goal)


def trajectory(trajectory_id: str) -> Record:
    """One catalog row by id (a unique prefix also works)."""
    return _store().trajectory(trajectory_id)


def states(trajectory_id: str) -> list:
    """Every state of a trajectory: index, time, url, title, action, error, thought, text, path."""
    return _store().states(trajectory_id)


def state(trajectory_id: str, index: int) -> Record:
    """One state (index -1 is the last): time, url, title, action, error, thought, screenshot, text, path."""
    return _store().state(trajectory_id, index)


def grep(pattern: str, **options) -> Hits:
    """Matching lines oldest first; options: limit, per_state, sort, after, and the filters in help(rbk)."""
    return _store().grep(pattern, **options)


def count(pattern: str, **options) -> dict:
    """Matching lines per state {(trajectory, state): n}, oldest first (by="trajectory" to sum per trajectory)."""
    return _store().count(pattern, **options)


def latest(pattern: str, **filters) -> Record | None:
    """The most recent matching line with its .value, or None."""
    return _store().latest(pattern, **filters)


def timeline(pattern: str, **options) -> Hits:
    """Matching lines oldest first with .value (value=REGEX to pick it; changes=True keeps only changes)."""
    return _store().timeline(pattern, **options)


def find_value(label: str, **options) -> Hits:
    """Values shown next to a label on pages, oldest first (changes=True keeps only changes)."""
    return _store().find_value(label, **options)


def errors(site=None, trajectory=None, outcome=None) -> list:
    """States whose action raised an error, oldest first: trajectory, state, time, url, action, error."""
    return _store().errors(site=site, trajectory=trajectory, outcome=outcome)
