"""The pool documents of one trajectory: state slices, events (one per transition) and notes.

A slice is a state with its neighbours: the centre page (field `page`) plus the actions around it, the agent's
thought and the goal (field `context`). An event is one transition: the action with its control, the URL change,
the error, and what appeared or disappeared on the page. Notes are per trajectory (procedure and hints).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.actions import describe, error_gist, split_actions
from ..core.blocks import page_record
from ..core.page import parse_page
from ..core.text import line_hash
from ..trajectory.model import Trajectory
from .diff import diff_pages
from .notes import hints_note, procedure_note, short_url

EVENT_LINES = 12
"""Appeared/disappeared lines kept in an event's stored text (all of them are indexed)."""


@dataclass(slots=True)
class PoolDoc:
    """One document: what is shown (meta, optional text) and what is indexed (text per field)."""

    meta: dict
    fields: dict[str, str]
    counts: dict | None = None
    """field -> Counter of index terms, when computed ahead (in the insert's workers) by `count_terms`."""


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


def count_terms(docs: TrajectoryDocs) -> TrajectoryDocs:
    """Tokenise every document's fields now, so that the pool writer only appends (the costly part moves to workers)."""
    from collections import Counter

    from ..core.text import tokenize

    for doc in (*docs.slices, *docs.events, *docs.notes):
        doc.counts = {name: Counter(tokenize(text)) for name, text in doc.fields.items()}
    return docs


def trajectory_docs(trajectory: Trajectory, dirname: str, note_writer=None) -> TrajectoryDocs:
    """Build the pool documents of `trajectory` (stored under folder `dirname`)."""
    base = {"t": trajectory.id, "d": dirname, "s": trajectory.site, "n": len(trajectory.states)}
    out = TrajectoryDocs(trajectory.id)
    described = [[describe(a, s.text) for a in split_actions(s.action)] for s in trajectory.states]
    parsed = [parse_page(s.text) for s in trajectory.states]
    lines = [page.lines() for page in parsed]
    hashes: dict[str, int] = {}  # states of one run share most lines: hash each distinct line once
    for state in trajectory.states:
        out.slices.append(_slice(trajectory, state.index, described, base))
        header = {"title": state.title, "action": state.action or "", "error": state.action_error or "",
                  "thought": state.thought or ""}  # fmt: skip
        out.pages.append(page_record(header, parsed[state.index]))
        distinct = {line.strip() for line in lines[state.index]}
        out.slices[-1].meta["nl"] = len(distinct)  # its line hashes' count: which states show a given line
        out.line_hashes.extend(
            sorted(hashes.get(line) or hashes.setdefault(line, line_hash(line, trajectory.site)) for line in distinct)
        )
    for state in trajectory.states:
        event = _event(trajectory, state.index, described, base, lines)
        if event is not None:
            out.events.append(event)
    out.notes = _notes(trajectory, base, note_writer)
    return out


def _slice(trajectory: Trajectory, i: int, described: list[list[str]], base: dict) -> PoolDoc:
    state = trajectory.states[i]
    meta = dict(base, i=i, u=state.url, ti=state.title, ts=state.timestamp)
    around = []
    if i > 0:
        around.append("; ".join(described[i - 1]))
    around.append("; ".join(described[i]))
    if state.action_error:
        around.append(error_gist(state.action_error))
    context = "\n".join(around + [state.thought or "", trajectory.goal])
    page = f"{state.title}\n{state.url}\n{state.text}"
    return PoolDoc(meta=meta, fields={"page": page, "context": context})


def _event(
    trajectory: Trajectory, i: int, described: list[list[str]], base: dict, page_lines: list[list[str]]
) -> PoolDoc | None:
    """The transition out of state i (to i+1); the last state's action is an event without a next page."""
    state = trajectory.states[i]
    nxt = trajectory.states[i + 1] if i + 1 < len(trajectory.states) else None
    if not state.action and nxt is None:
        return None
    lines = [f"action: {'; '.join(described[i]) or '(none)'}"]
    if state.action_error:
        lines.append(f"error: {error_gist(state.action_error)}")
    indexed_extra = ""
    if nxt is not None:
        if nxt.url != state.url:
            lines.append(f"url: {short_url(state.url)} -> {short_url(nxt.url)}")
        if nxt.title != state.title:
            lines.append(f"title: {state.title} -> {nxt.title}")
        change = diff_pages(page_lines[i], page_lines[i + 1])
        if change.appeared:
            lines.append(
                "appeared: "
                + " | ".join(change.appeared[:EVENT_LINES])
                + (f" | (+{len(change.appeared) - EVENT_LINES} more)" if len(change.appeared) > EVENT_LINES else "")
            )
        if change.disappeared:
            lines.append(
                "disappeared: "
                + " | ".join(change.disappeared[:EVENT_LINES])
                + (
                    f" | (+{len(change.disappeared) - EVENT_LINES} more)"
                    if len(change.disappeared) > EVENT_LINES
                    else ""
                )
            )
        if change.empty and not state.action_error:
            lines.append("page unchanged")
        indexed_extra = "\n".join(change.appeared[EVENT_LINES:200] + change.disappeared[EVENT_LINES:100])
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
    return PoolDoc(meta=meta, fields={"event": f"{text}\n{indexed_extra}"})


def _notes(trajectory: Trajectory, base: dict, note_writer) -> list[PoolDoc]:
    writer = note_writer or _deterministic
    last = len(trajectory.states) - 1
    meta = dict(base, i=0, j=last, u=trajectory.start_url, ts=trajectory.last_timestamp, ok=trajectory.succeeded)
    docs = []
    for kind, text in writer(trajectory):
        if text:
            docs.append(PoolDoc(meta=dict(meta, kind=kind, text=text), fields={"note": text}))
    return docs


def _deterministic(trajectory: Trajectory) -> list[tuple[str, str | None]]:
    return [("procedure", procedure_note(trajectory)), ("hints", hints_note(trajectory))]
