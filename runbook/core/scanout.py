"""What the offline planner's sandbox programs print (scan, detail) as typed records: ScoredState, Run and Step,
each written as a JSON line with short keys by its `to_json` and read back by its `from_json` (the only places the
short keys appear), and Scan, everything one scan printed. Nothing here reads the store. Both sides read with it:
rbplan, to choose the states it details in the same call, and the planner on the host, from the call's output."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class ScoredState:
    """One state as the scan scored it (by its text; a look-alike screenshot by its picture)."""

    trajectory_id: str
    state_index: int
    score: float = 0.0
    coverage: float = 0.0
    """The share of the question's weight its page and its run's goal cover (the first few records only)."""
    matched: list[str] = field(default_factory=list)
    """The question's patterns the state matched (the first few records only)."""
    time: str = ""
    url: str = ""
    """Its url (the first few records only)."""
    success: int | None = None
    """Its run's: 1, 0, or None when the outcome says neither."""
    n_states: int = 0
    """States of its run."""
    error: bool = False
    """Its action raised an error."""
    trouble: int | None = None
    """Words of trouble on its page (gotcha scans only)."""
    hash_bits: int | None = None
    """Screenshot only: bits of dHash that differ from the question's image."""
    grey: float | None = None
    """Screenshot only: mean grey difference of the thumbnails (0 = the same picture)."""

    @property
    def key(self) -> tuple[str, int]:
        return (self.trajectory_id, self.state_index)

    @classmethod
    def from_json(cls, rec: dict[str, Any]) -> ScoredState:
        """A state or image record as the scan prints it."""
        return cls(
            trajectory_id=rec["t"],
            state_index=rec["i"],
            score=rec.get("s", 0.0),
            coverage=rec.get("cov", 0.0),
            matched=rec.get("m", []),
            time=rec.get("time", ""),
            url=rec.get("url", ""),
            success=rec.get("ok"),
            n_states=rec.get("n", 0),
            error=bool(rec.get("err")),
            trouble=rec.get("tr"),
            hash_bits=rec.get("d"),
            grey=rec.get("px"),
        )

    def to_json(self, kind: str = "state", *, full: bool = False) -> dict[str, Any]:
        """The record the scan prints: `kind` state, latest or extra; `full` adds what matched and where."""
        rec: dict[str, Any] = {
            "type": kind,
            "t": self.trajectory_id,
            "i": self.state_index,
            "s": self.score,
            "time": self.time,
            "ok": self.success,
            "n": self.n_states,
            "err": int(self.error),
        }
        if full:
            rec.update(cov=self.coverage, m=self.matched, url=self.url)
        if self.trouble is not None:
            rec["tr"] = self.trouble
        return rec

    def image_json(self) -> dict[str, Any]:
        """The record of a stored screenshot that looks like the question's image."""
        return {
            "type": "image",
            "t": self.trajectory_id,
            "i": self.state_index,
            "d": self.hash_bits,
            "px": self.grey,
            "time": self.time,
        }


@dataclass(frozen=True, slots=True)
class Run:
    """One trajectory as the scan scored it."""

    trajectory_id: str
    score: float = 0.0
    """The sum of its three best state scores."""
    goal_score: float = 0.0
    """How well its goal matches the question (terms weighed by rarity among goals)."""
    head: int = 0
    """How many of the goal's first two words (its action and its object) are question terms."""
    goal: str = ""
    success: int | None = None
    """1, 0, or None when the outcome says neither."""
    n_states: int = 0
    n_errors: int = 0
    """States whose action raised an error."""

    @classmethod
    def from_json(cls, rec: dict[str, Any]) -> Run:
        """A run's record as the scan prints it."""
        return cls(
            trajectory_id=rec["t"],
            score=rec.get("s", 0.0),
            goal_score=rec.get("gs", 0.0),
            head=rec.get("head", 0),
            goal=rec.get("goal", ""),
            success=rec.get("ok"),
            n_states=rec.get("n", 0),
            n_errors=rec.get("ne", 0),
        )

    def to_json(self) -> dict[str, Any]:
        """The record the scan prints."""
        return {
            "type": "traj",
            "t": self.trajectory_id,
            "s": self.score,
            "gs": self.goal_score,
            "head": self.head,
            "ok": self.success,
            "n": self.n_states,
            "ne": self.n_errors,
            "goal": self.goal,
        }

    def workflow_score(self, best_states: float) -> float:
        """How likely this run shows the question's workflow: goal first, its pages second, clean successes up."""
        score = self.goal_score * (1 + 0.5 * self.head) + 2.0 * self.score / max(best_states, 1e-9)
        score *= 1.3 if self.success == 1 else 1.0
        # errors and length are detours: a short clean run shows the way best
        return score / (1 + 0.5 * self.n_errors / max(self.n_states, 1)) / (1 + 0.02 * self.n_states)

    def trouble_score(self, best_states: float) -> float:
        """How likely this run shows what the question says goes wrong: goal and pages, then failure and errors."""
        score = self.goal_score * (1 + 0.5 * self.head) + 2.0 * self.score / max(best_states, 1e-9)
        score *= 1.3 if self.success == 0 else 1.0
        return score * (1 + 0.3 * min(self.n_errors, 3) / 3)


@dataclass(frozen=True)
class Scan:
    """Everything one scan printed."""

    df: dict[str, list[int]] = field(default_factory=dict)
    """{pattern label: [states, trajectories] it was found in}."""
    n_states: int = 0
    missing: list[str] = field(default_factory=list)
    """The question's patterns found in no state."""
    sites: list[str] = field(default_factory=list)
    """The sites the question names."""
    states: list[ScoredState] = field(default_factory=list)
    latest: list[ScoredState] = field(default_factory=list)
    extras: list[ScoredState] = field(default_factory=list)
    """States that cover what the best states leave out."""
    runs: list[Run] = field(default_factory=list)
    images: list[ScoredState] = field(default_factory=list)
    image_error: str = ""
    ran: bool = False
    """Whether the terms line arrived (the scan ran)."""


@dataclass(frozen=True, slots=True)
class Step:
    """One state as `detail` read it."""

    trajectory_id: str
    state_index: int
    time: str = ""
    url: str = ""
    title: str = ""
    action: str = ""
    """The action with the controls it used, as the page names them."""
    error: str = ""
    """The gist of the error the action raised."""
    lines: list[str] = field(default_factory=list)
    """The page lines quoted."""
    thought: str = ""
    """The sentence of the agent's thought that says most about the question, when it says more than the page."""

    @classmethod
    def from_json(cls, rec: dict[str, Any]) -> Step:
        """A step record as `detail` prints it."""
        return cls(
            trajectory_id=rec["t"],
            state_index=rec["i"],
            time=rec.get("time", ""),
            url=rec.get("url", ""),
            title=rec.get("title", ""),
            action=rec.get("act", ""),
            error=rec.get("err", ""),
            lines=rec.get("lines", []),
            thought=rec.get("thought", ""),
        )

    def to_json(self, *, quoted: bool = True) -> dict[str, Any]:
        """The record `detail` prints; `quoted`: with its page lines (a run walked through speaks through its
        actions only)."""
        rec: dict[str, Any] = {
            "type": "step",
            "t": self.trajectory_id,
            "i": self.state_index,
            "time": self.time,
            "url": self.url,
            "title": self.title,
            "act": self.action,
            "err": self.error,
        }
        if quoted:
            rec["lines"] = self.lines
        if self.thought:
            rec["thought"] = self.thought
        return rec


def json_lines(output: str) -> list[dict[str, Any]]:
    """The JSON objects of a tool output, one a line; lines that are not JSON (an elision note) are skipped."""
    out = []
    for line in output.splitlines():
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return out


def read_scan(output: str) -> Scan:
    """The scan's records in a tool output (the other records skipped)."""
    terms: dict[str, Any] | None = None
    states: dict[str, list[ScoredState]] = {"state": [], "latest": [], "extra": [], "image": []}
    runs: list[Run] = []
    image_error = ""
    for rec in json_lines(output):
        kind = rec.get("type", "")
        if kind == "terms":
            terms = rec
        elif kind in ("state", "latest", "extra"):
            states[kind].append(ScoredState.from_json(rec))
        elif kind == "traj":
            runs.append(Run.from_json(rec))
        elif kind == "image":
            if rec.get("error"):
                image_error = rec["error"]
            else:
                states["image"].append(ScoredState.from_json(rec))
    found = terms or {}
    return Scan(
        df=found.get("df", {}),
        n_states=int(found.get("n_states") or 0),
        missing=found.get("missing", []),
        sites=found.get("sites", []),
        states=states["state"],
        latest=states["latest"],
        extras=states["extra"],
        runs=runs,
        images=states["image"],
        image_error=image_error,
        ran=terms is not None,
    )


def read_steps(output: str) -> list[Step]:
    """The `detail` records in a tool output."""
    return [Step.from_json(rec) for rec in json_lines(output) if rec.get("type") == "step"]


def find_hit(scan: Scan, key: tuple[str, int]) -> ScoredState | None:
    for hit in scan.latest + scan.states + scan.extras + scan.images:
        if hit.key == key:
            return hit
    return None
