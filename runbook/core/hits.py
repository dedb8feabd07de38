"""A ranked pool document: what method R's ranking hands to the host's items, to the offline planner and to the
sandbox's `recall` program. The pools store documents with short keys (one JSON line each, millions of them);
they become a Hit at the boundary, once, so that nothing above reads `doc["t"]`."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from .blocks import Page

WIDTH = 220
"""Characters of one line of a hit's body in the recall program's output."""


@dataclass(slots=True)
class Hit:
    """One ranked document of a pool: a strategy note, an event or a state slice, with what the ranking added."""

    id: str
    """n12, e34 or s56: the pool's letter and the document's number (valid for the pools' stamp)."""
    pool: str
    """notes, events or slices."""
    trajectory_id: str
    folder: str
    """The trajectory's folder under trajectories/."""
    state_index: int
    """The state a slice shows; the first state a note or an event covers."""
    end_state_index: int | None = None
    """The last state a note or an event covers (None for a slice)."""
    site: str = ""
    n_states: int = 0
    """States of the whole trajectory."""
    url: str = ""
    title: str = ""
    timestamp: str | None = None
    text: str = ""
    """A note's or an event's text (a slice's page is read, not stored)."""
    kind: str = ""
    """A note's kind: procedure or hints."""
    succeeded: bool | None = None
    """A note's run: succeeded, failed, or not known."""
    score: float = 0.0
    label: str = ""
    """latest or older view of a page, a sighting's origin, ..."""
    excerpt: str = ""
    """A slice's page cut to the lines that match."""
    match: float = 0.0
    best_lines: list[str] = field(default_factory=list)
    header: dict[str, Any] = field(default_factory=dict)
    """A slice's state header (title, action, error, ...)."""
    reply: list[str] = field(default_factory=list)
    """A slice: what the next page said back to this state's action ('You saved the product.')."""
    same_as: str | None = None
    """The id of an earlier slice whose excerpt is identical."""
    differs: list[str] = field(default_factory=list)
    """A slice folded into an earlier one (`same_as`): the lines only its own page shows."""
    sighting_of: str | None = None
    """The id of the best page whose line this slice shows too."""
    packed: bool = False
    """Method R's own context holds this hit (method C keeps those first)."""
    page: Page | None = None
    """A slice's page structure, as read for its excerpt (not printed)."""
    furniture_tokens: int = 0
    """Tokens of its excerpt that are the site's furniture."""

    @classmethod
    def from_doc(cls, doc: dict[str, Any], hit_id: str, pool: str, **extra: Any) -> Hit:
        """The Hit of a stored pool document (short keys, see runbook/pools/documents.py)."""
        return cls(
            id=hit_id,
            pool=pool,
            trajectory_id=doc["t"],
            folder=doc.get("d") or doc["t"],
            state_index=doc["i"],
            end_state_index=doc.get("j"),
            site=doc.get("s") or "",
            n_states=doc.get("n") or 0,
            url=doc.get("u") or "",
            title=doc.get("ti") or "",
            timestamp=doc.get("ts"),
            text=doc.get("text") or "",
            kind=doc.get("kind") or "",
            succeeded=doc.get("ok"),
            reply=list(doc.get("r") or ()),
            **extra,
        )

    def unfolded(self) -> Hit:
        """This slice shown as its own page when the view it was folded into is not shown (its excerpt is its own:
        the fold only hid it)."""
        return replace(self, same_as=None, differs=[])

    @property
    def key(self) -> tuple[str, int]:
        return self.trajectory_id, self.state_index

    def states(self) -> str:
        """'state 3' or 'states 3-5'."""
        end = self.end_state_index
        return (
            f"states {self.state_index}-{end}"
            if end is not None and end != self.state_index
            else f"state {self.state_index}"
        )

    def labels(self) -> list[str]:
        """What the hit is, in words: a note's kind, its run's outcome, the ranking's label."""
        labels = [self.kind] if self.pool == "notes" and self.kind else []
        if self.succeeded is not None:
            labels.append("successful run" if self.succeeded else "failed run")
        return labels + ([self.label] if self.label else [])

    def heading(self) -> str:
        """The hit's one-line heading, as `recall` prints it and a model policy's first message shows it."""
        labels = self.labels()
        return f"[{self.id}] {self.trajectory_id} {self.states()} @ {self.timestamp or '?'} {self.url}" + (
            f" [{'; '.join(labels)}]" if labels else ""
        )

    def body_lines(self, limit: int) -> list[str]:
        """Up to `limit` lines of the hit's text (a slice: its title, action, error and excerpt), cut to WIDTH."""
        if self.pool == "slices":
            head = [f"title: {self.header.get('title', '')}"]
            if self.header.get("action"):
                head.append(f"next action: {self.header['action'].splitlines()[0]}")
            if self.header.get("error"):
                head.append(f"error: {self.header['error'].splitlines()[0]}")
            if self.same_as:
                return head + [f"(page excerpt identical to {self.same_as})"]
            text = self.excerpt
        else:
            head, text = [], self.text
        lines = [line for line in text.split("\n") if line.strip()]
        body = head + lines[:limit]
        if len(lines) > limit:
            body.append(f"(+{len(lines) - limit} more lines)")
        return [line if len(line) <= WIDTH else line[: WIDTH - 1] + "…" for line in body]

    def gist(self, width: int = 140) -> str:
        """The first line that says something."""
        text = (self.text or self.excerpt).strip().split("\n")
        return next((line.strip() for line in text if line.strip()), "")[:width]

    def to_json(self, body_lines: int | None = None) -> dict[str, Any]:
        """The hit as `recall --json` prints it: the names above, empty fields left out."""
        out = {
            "id": self.id,
            "pool": self.pool,
            "trajectory_id": self.trajectory_id,
            "state_index": self.state_index,
            "end_state_index": self.end_state_index,
            "url": self.url or None,
            "timestamp": self.timestamp,
            "score": self.score,
            "label": self.label or None,
            "kind": self.kind or None,
            "succeeded": self.succeeded,
            "same_as": self.same_as,
        }
        out = {key: value for key, value in out.items() if value is not None}
        if body_lines is not None:
            out["text"] = "\n".join(self.body_lines(body_lines))
        return out
