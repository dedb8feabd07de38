"""The pool documents of one trajectory: state slices, events (one per transition) and notes.

A slice is a state with its neighbours: the centre page (field `page`) plus the actions around it, the agent's
thought and the goal (field `context`). An event is one transition: the action with its control, the URL change,
the error, and what appeared or disappeared on the page. Notes are per trajectory (procedure and hints).
"""

from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass, field
from itertools import chain

import numpy as np

from ..core.actions import describe, error_gist, split_actions
from ..core.blocks import blocks_json, page_record
from ..core.messages import OpenDialog, replies, unanswered_dialogs, with_replies, without_echoes
from ..core.page import parse_page
from ..core.pools import POOL_FIELDS
from ..core.text import line_hash
from ..trajectory.model import Trajectory
from .diff import PageDiff, diff_pages
from .notes import hints_note, procedure_note, short_url

EVENT_LINES = 12
"""Appeared/disappeared lines kept in an event's stored text (all of them are indexed)."""
APPEARED_KEPT, APPEARED_CHARS = 80, 200
"""Of an event whose page gained more lines than it shows, this many (cut to this length) are kept for the question
to pick from: a table that appeared is not elided to its first rows."""
MESSAGES_SHOWN = 3
"""Messages of the page an action led to, shown in its event."""


@dataclass(slots=True)
class PoolDoc:
    """One document: what is shown (meta, optional text) and what is indexed (text per field)."""

    meta: dict
    fields: dict[str, str]


@dataclass(slots=True)
class CountedField:
    """One field's term counts over a pool's documents of one trajectory, one document after another, in each
    document's count order (the order gives new terms their ids): what the pool writer appends as postings."""

    terms: str
    """Every document's terms, joined by newlines (a term is a run of word characters, never a newline)."""
    counts: np.ndarray
    """Each term's count in its document."""
    sizes: np.ndarray
    """How many terms each document has."""

    @classmethod
    def of(cls, counters: list[Counter[str]]) -> CountedField:
        # chained in C: a generator over every term of every document cost 0.3 s of the 3.7 s counting the two
        # real sets took
        return cls(
            "\n".join(chain.from_iterable(counters)),
            np.fromiter(chain.from_iterable(map(Counter.values, counters)), dtype=np.int64),
            np.fromiter(map(len, counters), dtype=np.int64, count=len(counters)),
        )

    def term_list(self) -> list[str]:
        return self.terms.split("\n") if self.terms else []


@dataclass(slots=True)
class TrajectoryDocs:
    """Everything one trajectory adds to the pools."""

    trajectory_id: str
    slices: list[PoolDoc] = field(default_factory=list)
    events: list[PoolDoc] = field(default_factory=list)
    notes: list[PoolDoc] = field(default_factory=list)
    line_hashes: list[int] = field(default_factory=list)
    """One per distinct block text per state (core.page), hashed with the site: how many of a site's states show
    a block, and which states show the same one."""
    pages: list[bytes] = field(default_factory=list)
    """One page record per state (core.page.page_record, JSON): its structure, parsed once here."""
    counted: dict[str, CountedField] = field(default_factory=dict)
    """'pool/field' -> the documents' term counts, when counted ahead (in the insert's workers) by `count_terms`,
    which then empties each document's `fields`."""


def count_terms(docs: TrajectoryDocs) -> TrajectoryDocs:
    """Tokenise every document's fields now, so that the pool writer only appends (the costly part moves to workers).
    The texts are dropped once counted, and the counts travel back from the worker as one string and two arrays per
    field: a Counter per document was a third of what crossed, and unpickling them a tenth of the writer's work."""
    from ..core.text import term_counts

    for name, fields in POOL_FIELDS.items():
        pool: list[PoolDoc] = getattr(docs, name)
        for field_name in fields:
            count = _page_terms if field_name == "page" else term_counts
            docs.counted[f"{name}/{field_name}"] = CountedField.of([count(d.fields.get(field_name, "")) for d in pool])
        for doc in pool:
            doc.fields = {}
    return docs


COUNTED_PAGES = 512
"""Pages whose term counts a worker keeps: a third of the real states show a page some state showed before (a site's
start page, a run that reloads), 2,650 of 8,537, and nearly every repeat comes within a few hundred states."""


@functools.lru_cache(maxsize=COUNTED_PAGES)
def _page_terms(text: str) -> Counter[str]:
    """The page field's term counts, counted once per distinct page (shared between documents, never changed)."""
    from ..core.text import term_counts

    return term_counts(text)


def trajectory_docs(trajectory: Trajectory, dirname: str, note_writer=None) -> TrajectoryDocs:
    """Build the pool documents of `trajectory` (stored under folder `dirname`)."""
    base = {"t": trajectory.id, "d": dirname, "s": trajectory.site, "n": len(trajectory.states)}
    out = TrajectoryDocs(trajectory.id)
    described = [[describe(a, s.text) for a in split_actions(s.action)] for s in trajectory.states]
    states = trajectory.states
    parsed = with_replies(
        [parse_page(s.text) for s in states], [s.url for s in states], [bool(s.action) for s in states]
    )
    said = without_echoes(replies(parsed), [s.action or "" for s in states])
    dialogs = unanswered_dialogs(parsed, [s.text for s in states], [s.action or "" for s in states])
    lines = [page.lines() for page in parsed]
    hashes: dict[str, int] = {}  # states of one run share most lines: hash each distinct line once
    encoded: dict[int, str] = {}  # id of a parsed page (all held in `parsed` meanwhile) -> its blocks as JSON
    for state in trajectory.states:
        reply = said[state.index + 1] if state.index + 1 < len(states) and state.action else []
        out.slices.append(_slice(trajectory, state.index, described, base, said[state.index], reply))
        header = {"title": state.title, "action": state.action or "", "error": state.action_error or "",
                  "thought": state.thought or ""}  # fmt: skip
        page = parsed[state.index]  # a page shown again is the same Page: its blocks are encoded once
        blocks = encoded.get(id(page)) or encoded.setdefault(id(page), blocks_json(page))
        out.pages.append(page_record(header, page, blocks))
        distinct = {line.strip() for line in lines[state.index]}
        out.slices[-1].meta["nl"] = len(distinct)  # its line hashes' count: which states show a given line
        out.line_hashes.extend(
            sorted(hashes.get(line) or hashes.setdefault(line, line_hash(line, trajectory.site)) for line in distinct)
        )
    for state in trajectory.states:
        event = _event(trajectory, state.index, described, base, lines, said)
        if event is not None:
            out.events.append(event)
    out.notes = _notes(trajectory, base, note_writer, said, dialogs, described)
    return out


def _slice(
    trajectory: Trajectory, i: int, described: list[list[str]], base: dict, said: list[str], reply: list[str]
) -> PoolDoc:
    """State i's document; `said`: what its page said back to the action before it; `reply`: what the next page
    said back to state i's own action (shown beside that action: what it led to)."""
    state = trajectory.states[i]
    meta = dict(base, i=i, u=state.url, ti=state.title, ts=state.timestamp)
    if reply:
        meta["r"] = [m[:APPEARED_CHARS] for m in reply[:MESSAGES_SHOWN]]
    around = list(said)  # what the page says counts as much as what the agent did there
    if i > 0:
        around.append("; ".join(described[i - 1]))
    around.append("; ".join(described[i]))
    if state.action_error:
        around.append(error_gist(state.action_error))
    context = "\n".join(around + [state.thought or "", trajectory.goal])
    page = f"{state.title}\n{state.url}\n{state.text}"
    return PoolDoc(meta=meta, fields={"page": page, "context": context})


def _event(
    trajectory: Trajectory,
    i: int,
    described: list[list[str]],
    base: dict,
    page_lines: list[list[str]],
    said: list[list[str]],
) -> PoolDoc | None:
    """The transition out of state i (to i+1); the last state's action is an event without a next page."""
    state = trajectory.states[i]
    nxt = trajectory.states[i + 1] if i + 1 < len(trajectory.states) else None
    if not state.action and nxt is None:
        return None
    lines = [f"action: {'; '.join(described[i]) or '(none)'}"]
    if state.action_error:
        lines.append(f"error: {error_gist(state.action_error)}")
    if nxt is not None and said[i + 1]:
        lines.append("page said: " + " | ".join(said[i + 1][:MESSAGES_SHOWN]))
    change = diff_pages(page_lines[i], page_lines[i + 1]) if nxt is not None else None
    if nxt is not None and change is not None:
        if nxt.url != state.url:
            lines.append(f"url: {short_url(state.url)} -> {short_url(nxt.url)}")
        if nxt.title != state.title:
            lines.append(f"title: {state.title} -> {nxt.title}")
        lines += _change_lines(change, bool(state.action_error))
    else:
        lines.append("(final action of the run)")
    text = "\n".join(lines)
    end = i + 1 if nxt is not None else i
    meta = dict(
        base,
        i=i,
        j=end,
        u=(nxt or state).url,
        ti=(nxt or state).title,
        ts=(nxt or state).timestamp or state.timestamp,
        text=text,
    )
    indexed_extra = ""
    if change is not None:
        indexed_extra = "\n".join(change.appeared[EVENT_LINES:200] + change.disappeared[EVENT_LINES:100])
        if len(change.appeared) > EVENT_LINES:  # the question picks which of them the event shows (core.recall)
            meta["a"] = [line[:APPEARED_CHARS] for line in change.appeared[:APPEARED_KEPT]]
    return PoolDoc(meta=meta, fields={"event": f"{text}\n{indexed_extra}"})


def _change_lines(change: PageDiff, failed: bool) -> list[str]:
    """What appeared and disappeared on the page, the first EVENT_LINES of each and how many more."""
    out = []
    for name, lines in (("appeared", change.appeared), ("disappeared", change.disappeared)):
        if lines:
            more = f" | (+{len(lines) - EVENT_LINES} more)" if len(lines) > EVENT_LINES else ""
            out.append(f"{name}: " + " | ".join(lines[:EVENT_LINES]) + more)
    if change.empty and not failed:
        out.append("page unchanged")
    return out


def _notes(
    trajectory: Trajectory,
    base: dict,
    note_writer,
    said: list[list[str]],
    dialogs: list[OpenDialog],
    described: list[list[str]],
) -> list[PoolDoc]:
    last = len(trajectory.states) - 1
    meta = dict(base, i=0, j=last, u=trajectory.start_url, ts=trajectory.last_timestamp, ok=trajectory.succeeded)
    docs = []
    notes = note_writer(trajectory) if note_writer else _deterministic(trajectory, said, dialogs, described)
    for kind, text in notes:
        if text:
            docs.append(PoolDoc(meta=dict(meta, kind=kind, text=text), fields={"note": text}))
    return docs


def _deterministic(
    trajectory: Trajectory, said: list[list[str]], dialogs: list[OpenDialog], described: list[list[str]]
) -> list[tuple[str, str | None]]:
    procedure = procedure_note(trajectory, said, described)  # the actions described once, for the slices too
    return [("procedure", procedure), ("hints", hints_note(trajectory, said, dialogs, described))]
