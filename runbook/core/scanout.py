"""Reading what the offline planner's sandbox programs print (scan, detail): JSON lines into Scan, ScoredState, Run
and Step records. Nothing here reads the store. Both sides read with it: rbplan, to choose the states it details in
the same call, and the planner on the host, from the call's output."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class ScoredState:
    """One state as the scan scored it."""

    t: str
    i: int
    s: float = 0.0
    cov: float = 0.0
    m: list[str] = field(default_factory=list)
    """The question's patterns the state matched (the first few records only)."""
    time: str = ""
    url: str = ""
    ok: int | None = None
    n: int = 0
    err: bool = False
    d: int | None = None
    """Screenshot only: bits of dHash that differ from the question's image."""
    px: float | None = None
    """Screenshot only: mean grey difference of the thumbnails (0 = the same picture)."""

    @property
    def key(self) -> tuple[str, int]:
        return (self.t, self.i)


@dataclass
class Run:
    """One trajectory as the scan scored it."""

    t: str
    s: float = 0.0
    """The sum of its three best state scores."""
    gs: float = 0.0
    """How well its goal matches the question (terms weighed by rarity among goals)."""
    head: int = 0
    """How many of the goal's first two words (its action and its object) are question terms."""
    goal: str = ""
    ok: int | None = None
    n: int = 0
    ne: int = 0
    """States whose action raised an error."""
    first: str = ""
    site: str = ""

    def workflow_score(self, best_states: float) -> float:
        """How likely this run shows the question's workflow: goal first, its pages second, clean successes up."""
        score = self.gs * (1 + 0.5 * self.head) + 2.0 * self.s / max(best_states, 1e-9)
        score *= 1.3 if self.ok == 1 else 1.0
        # errors and length are detours: a short clean run shows the way best
        return score / (1 + 0.5 * self.ne / max(self.n, 1)) / (1 + 0.02 * self.n)

    def trouble_score(self, best_states: float) -> float:
        """How likely this run shows what the question says goes wrong: goal and pages, then failure and errors."""
        score = self.gs * (1 + 0.5 * self.head) + 2.0 * self.s / max(best_states, 1e-9)
        score *= 1.3 if self.ok == 0 else 1.0
        return score * (1 + 0.3 * min(self.ne, 3) / 3)


@dataclass
class Scan:
    """Everything one scan printed."""

    df: dict[str, list[int]] = field(default_factory=dict)
    n_states: int = 0
    missing: list[str] = field(default_factory=list)
    sites: list[str] = field(default_factory=list)
    states: list[ScoredState] = field(default_factory=list)
    latest: list[ScoredState] = field(default_factory=list)
    extras: list[ScoredState] = field(default_factory=list)
    """States that cover what the best states leave out."""
    runs: list[Run] = field(default_factory=list)
    images: list[ScoredState] = field(default_factory=list)
    image_error: str = ""
    ok: bool = False
    """Whether the terms line arrived (the scan ran)."""


@dataclass
class Step:
    """One state as `detail` read it."""

    t: str
    i: int
    time: str = ""
    url: str = ""
    title: str = ""
    act: str = ""
    err: str = ""
    lines: list[str] = field(default_factory=list)
    thought: str = ""
    """The sentence of the agent's thought that says most about the question, when it says more than the page."""


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


def _fields(cls: Any, rec: dict[str, Any]) -> dict[str, Any]:
    names = cls.__dataclass_fields__
    return {k: v for k, v in rec.items() if k in names}


def read_scan(output: str) -> Scan:
    scan = Scan()
    for rec in json_lines(output):
        kind = rec.pop("type", "")
        if kind == "terms":
            scan.ok = True
            scan.df, scan.missing, scan.sites = rec.get("df", {}), rec.get("missing", []), rec.get("sites", [])
            scan.n_states = int(rec.get("n_states") or 0)
        elif kind in ("state", "latest", "extra"):
            {"state": scan.states, "latest": scan.latest, "extra": scan.extras}[kind].append(
                ScoredState(**_fields(ScoredState, rec))
            )
        elif kind == "traj":
            scan.runs.append(Run(**_fields(Run, rec)))
        elif kind == "image":
            if rec.get("error"):
                scan.image_error = rec["error"]
            else:
                scan.images.append(
                    ScoredState(t=rec["t"], i=rec["i"], time=rec.get("time", ""), d=rec.get("d"), px=rec.get("px"))
                )
    return scan


def read_steps(output: str) -> list[Step]:
    return [Step(**_fields(Step, rec)) for rec in json_lines(output) if rec.get("type") == "step"]


def find_hit(scan: Scan, key: tuple[str, int]) -> ScoredState | None:
    for hit in scan.latest + scan.states + scan.extras + scan.images:
        if hit.key == key:
            return hit
    return None
