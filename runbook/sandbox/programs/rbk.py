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
    p = rbk.page("wa-gitlab-452", 3)                    # the page's structure: blocks and tables
    for b in p.blocks: print(b.kind, b.region, b.text)  # heading, count, field, row, message, ...
    header, *rows = p.tables[0]; print(header, len(rows))   # a table's cells, to filter, count or compare
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
Use rbk.StoreReader(path) for a store other than the default one; it has the same functions as methods.
"""

from __future__ import annotations

import os

from runbook.core.reader import SORTS, StoreReader, default_store_dir  # noqa: F401
from runbook.core.records import Hits, RbkError, Record, UnreadableState  # noqa: F401
from runbook.core.ripgrep import escape_regex, ripgrep_binary  # noqa: F401
from runbook.core.statefile import FIELDS, HEADER_END, HEADER_FIELDS, NEWLINE_MARK, parse_state, read_header  # noqa: F401
from runbook.core.values import values  # noqa: F401

# what help(rbk) documents; Record (the dict type of results) and RbkError are importable too
__all__ = [
    "trajectories",
    "trajectory",
    "states",
    "state",
    "grep",
    "count",
    "latest",
    "timeline",
    "find_value",
    "values",
    "errors",
    "StoreReader",
]


def parse_state_text(text: str) -> tuple[dict, str, int]:
    """(header fields, page text, number of header lines incl. '---') of a state file's content."""
    return parse_state(text)


# -- the default store, as module functions --------------------------------------------------------------------
_default: StoreReader | None = None


def _store() -> StoreReader:
    global _default
    if _default is None or _default.root != os.path.abspath(default_store_dir()):
        _default = StoreReader()
    return _default


def trajectories(site=None, outcome=None, goal=None) -> list:
    """Catalog rows (id, site, goal, outcome, success, n_states, first_time, last_time, ...), oldest first."""
    return _store().trajectories(site=site, outcome=outcome, goal=goal)


def trajectory(trajectory_id: str) -> Record:
    """One catalog row by id (a unique prefix also works)."""
    return _store().trajectory(trajectory_id)


def page(trajectory_id: str, index: int) -> Record:
    """One state's page structure (blocks: kind, region, text; tables: header cells then rows' cells)."""
    return _store().page(trajectory_id, index)


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
