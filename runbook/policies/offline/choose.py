"""What the offline planner makes of its tool outputs: the scan's records, the spans it picks, the analysis it writes.

Everything here works on the JSON lines that runbook/sandbox/programs/rbscan.py prints in the sandbox; nothing reads the
store directly. Choices per question kind (a question image's look-alike screenshots always come first):

    static     the best-scoring states (at most 3 of one run) and the last state of the run whose goal asks the
               question, where that agent reported its answer
    dynamic    the newest states that show the question's names (or cover nearly as much of it as the best),
               then the best older ones, labelled older
    procedure  the run that best shows the workflow (its goal's action and object, success, few errors), whole
               or cut around its best states, a close runner-up, then the best other states
    gotcha     the run that best matches among those that failed or hit errors, with its errors and the states
               after them, then the best other states (the scan ranks trouble higher for these)
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ...agent.types import Span

MAX_STATES = 20
"""At most this many states across all spans (the finish contract)."""
STATIC_STATES = 6
PER_RUN = 3
"""At most this many of the best states from one run: neighbouring states mostly show the same page."""
SPAN_GAP = 2
"""Two chosen states of a run this close become one span with the states between: the steps that link them."""
DYNAMIC_STATES = 6
IMAGE_STATES, IMAGE_BITS, IMAGE_GREY = 3, 4, 0.02
"""Screenshots taken as the question's page: at most 3, within 4 hash bits and 0.02 grey levels of the closest."""
PROCEDURE_RUN_STATES = 10
"""A procedure's best run is returned whole up to this length; a longer one is cut around its best states."""
RUNNER_UP, RUNNER_UP_STATES = 0.85, 6
"""A second run scoring this close to the best is added too, cut to this many states around its best ones."""
GOTCHA_RUN_STATES = 8
GOTCHA_STATES = 12
MAX_QUOTED = 5
"""States whose lines the analysis quotes."""
ERROR_WIDTH = (100, 300)
"""Characters of an error shown in a walkthrough: a procedure needs to know one happened, a gotcha what it said."""


@dataclass
class Hit:
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
    states: list[Hit] = field(default_factory=list)
    latest: list[Hit] = field(default_factory=list)
    extras: list[Hit] = field(default_factory=list)
    """States that cover what the best states leave out."""
    runs: list[Run] = field(default_factory=list)
    images: list[Hit] = field(default_factory=list)
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


def _fields(cls, rec: dict[str, Any]) -> dict[str, Any]:
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
            {"state": scan.states, "latest": scan.latest, "extra": scan.extras}[kind].append(Hit(**_fields(Hit, rec)))
        elif kind == "traj":
            scan.runs.append(Run(**_fields(Run, rec)))
        elif kind == "image":
            if rec.get("error"):
                scan.image_error = rec["error"]
            else:
                scan.images.append(Hit(t=rec["t"], i=rec["i"], time=rec.get("time", ""), d=rec.get("d"),
                                       px=rec.get("px")))
    return scan


def read_steps(output: str) -> list[Step]:
    return [Step(**_fields(Step, rec)) for rec in json_lines(output) if rec.get("type") == "step"]


# -- choosing states -------------------------------------------------------------------------------------------
@dataclass
class Choice:
    """The states picked, most important first, with a note on each for the analysis."""

    keys: list[tuple[str, int]] = field(default_factory=list)
    notes: dict[tuple[str, int], str] = field(default_factory=dict)
    runs: list[Run] = field(default_factory=list)
    """The runs whose steps the analysis walks through (procedures, gotchas), best first."""
    contrasts: list[tuple[str, str, tuple[str, int], str]] = field(default_factory=list)
    """(typed, seen, state, time): a value the run typed and what another page shows instead."""

    @property
    def run(self) -> Run | None:
        return self.runs[0] if self.runs else None

    def add(self, key: tuple[str, int], note: str = "") -> bool:
        if key in self.keys or len(self.keys) >= MAX_STATES:
            return False
        self.keys.append(key)
        if note:
            self.notes[key] = note
        return True


def choose(kind: str, wants_latest: bool, scan: Scan) -> Choice:
    """The states to hand back for a question of `kind`, from what the scan found."""
    choice = Choice()
    pick_images(scan, choice)
    if kind == "procedure":
        pick_procedure(scan, choice)
    elif kind == "gotcha":
        pick_gotcha(scan, choice)
    elif wants_latest or kind == "dynamic":
        pick_latest(scan, choice)
    else:
        pick_best(scan.states, choice, STATIC_STATES - 1)
        pick_goal_answer(scan, choice)
    if scan.latest and not (wants_latest or kind == "dynamic"):
        choice.add(scan.latest[0].key, "the newest state showing the question's names")
    for hit in scan.extras[:2]:
        choice.add(hit.key, "covers other parts of the question")
    return choice


def pick_images(scan: Scan, choice: Choice) -> None:
    """The stored screenshots that are the question's image, as near as the sandbox can tell; among pictures
    that are alike, the states whose text matches the question first."""
    if not scan.images:
        return
    best = scan.images[0]
    alike = [h for h in scan.images if (h.d or 0) <= (best.d or 0) + IMAGE_BITS
             and (h.px or 0.0) <= (best.px or 0.0) + IMAGE_GREY][:IMAGE_STATES]
    text = {h.key: h.s for h in scan.states}
    alike.sort(key=lambda h: -text.get(h.key, 0.0))
    for hit in alike:
        choice.add(hit.key, "looks like the question's image")


def pick_best(hits: list[Hit], choice: Choice, limit: int) -> None:
    """Best-scoring states, at most PER_RUN of one run: a run's neighbouring states mostly show the same page."""
    per_run: dict[str, int] = {}
    for t, _ in choice.keys:
        per_run[t] = per_run.get(t, 0) + 1
    for hit in hits:
        if len(choice.keys) >= limit:
            break
        if per_run.get(hit.t, 0) >= PER_RUN or hit.key in choice.keys:
            continue
        per_run[hit.t] = per_run.get(hit.t, 0) + 1
        choice.add(hit.key)


def pick_goal_answer(scan: Scan, choice: Choice) -> None:
    """The last state of the run whose goal asks what the question asks: where that agent reported its answer."""
    asked = [r for r in scan.runs if r.gs > 0 and r.head > 0]
    if not asked:
        return
    run = max(asked, key=lambda r: (r.gs * (1 + 0.5 * r.head), r.ok == 1, r.s))
    choice.add((run.t, run.n - 1), "end of the run whose goal matches the question")


def pick_latest(scan: Scan, choice: Choice) -> None:
    """The newest of the states that match nearly as well as the best one, then the best older ones."""
    if not scan.states:
        return
    strong = sorted(scan.latest or scan.states[:1], key=lambda h: h.time, reverse=True)
    for n, hit in enumerate(strong[:3]):
        choice.add(hit.key, "latest sighting" if n == 0 else "")
    pick_best(scan.states, choice, DYNAMIC_STATES)
    newest = strong[0].time if strong else ""
    for key in choice.keys:
        hit = _find(scan, key)
        if hit and newest and hit.time < newest and key not in choice.notes:
            choice.notes[key] = "older"


def pick_procedure(scan: Scan, choice: Choice) -> None:
    """The run that best shows the workflow (goal, pages, success, few errors), whole; then the best other states."""
    best_states = max((r.s for r in scan.runs), default=0.0)
    ranked = sorted(scan.runs, key=lambda r: -r.workflow_score(best_states))
    if ranked:
        choice.runs.append(ranked[0])
        for i in run_window(scan, ranked[0], PROCEDURE_RUN_STATES):
            choice.add((ranked[0].t, i))
    if len(ranked) > 1 and ranked[1].workflow_score(best_states) >= RUNNER_UP * ranked[0].workflow_score(best_states):
        choice.runs.append(ranked[1])  # a close second may be the workflow meant
        for i in run_window(scan, ranked[1], RUNNER_UP_STATES):
            choice.add((ranked[1].t, i))
    pick_best(scan.states, choice, len(choice.keys) + 2)


def pick_gotcha(scan: Scan, choice: Choice) -> None:
    """The run that best matches the question among those that failed or hit errors, whole when short, else its
    errors with the state after each and its last state; then the best other states (already ranked for trouble)."""
    best_states = max((r.s for r in scan.runs), default=0.0)
    run = max(scan.runs, key=lambda r: r.trouble_score(best_states), default=None)
    if run is not None:
        choice.runs.append(run)
        errors = [h.i for h in scan.states if h.t == run.t and h.err]
        if run.n <= GOTCHA_RUN_STATES:
            indices = list(range(run.n))
        else:
            indices = sorted({j for i in errors for j in (i, i + 1) if j < run.n} | {run.n - 1})
            indices = indices[:GOTCHA_RUN_STATES] or run_window(scan, run, GOTCHA_RUN_STATES)
        for i in indices:
            choice.add((run.t, i))
    for hit in scan.states[:8]:
        if len(choice.keys) >= GOTCHA_STATES:
            break
        choice.add(hit.key)
        if hit.err and hit.i + 1 < hit.n:
            choice.add((hit.t, hit.i + 1))


def run_window(scan: Scan, run: Run, limit: int) -> list[int]:
    """A run's states: all of them when short, else `limit` states around the ones that scored."""
    if run.n <= limit:
        return list(range(run.n))
    scored = sorted((h for h in scan.states if h.t == run.t), key=lambda h: -h.s)
    center = scored[0].i if scored else run.n - 1
    start = max(0, min(center - limit // 2, run.n - limit))
    return list(range(start, start + limit))


def spans_of(keys: list[tuple[str, int]], gap: int = 0) -> list[Span]:
    """States of one trajectory at most `gap` states apart merged into spans (the states between included), in
    the order their first state was chosen, within MAX_STATES in all."""
    spans: list[Span] = []
    for t, i in keys:
        for n, span in enumerate(spans):
            if span.trajectory_id == t and span.start_state_index - 1 - gap <= i <= span.end_state_index + 1 + gap:
                spans[n] = Span(t, min(span.start_state_index, i), max(span.end_state_index, i))
                break
        else:
            spans.append(Span(t, i, i))
    spans = _merge_touching(spans)
    while sum(span.size for span in spans) > MAX_STATES:
        spans.pop()
    return spans


def _merge_touching(spans: list[Span]) -> list[Span]:
    out: list[Span] = []
    for span in spans:
        for n, kept in enumerate(out):
            if kept.trajectory_id == span.trajectory_id and not (
                    span.start_state_index > kept.end_state_index + 1 or span.end_state_index < kept.start_state_index - 1):
                out[n] = Span(kept.trajectory_id, min(kept.start_state_index, span.start_state_index),
                              max(kept.end_state_index, span.end_state_index))
                break
        else:
            out.append(span)
    return out


def _find(scan: Scan, key: tuple[str, int]) -> Hit | None:
    for hit in scan.latest + scan.states + scan.extras + scan.images:
        if hit.key == key:
            return hit
    return None


# -- the analysis ----------------------------------------------------------------------------------------------
_IDS = re.compile(r"\[\d+\]\s*|\bid=\S+")
KIND_NAMES = {"static": "a fact shown on a page", "dynamic": "a value that changes over time (the latest wins)",
              "procedure": "how to do something", "gotcha": "what goes wrong and how to get past it"}


def write_analysis(kind: str, wants_latest: bool, scan: Scan, choice: Choice, steps: list[Step],
                   *, weak_missing: set[str] = frozenset()) -> str:
    """A few plain sentences: the question's kind, where the evidence is, latest vs older, missing terms, steps."""
    by_key = {(s.t, s.i): s for s in steps}
    parts = [f"Question kind: {KIND_NAMES.get(kind, kind)}."]
    missing = [m for m in scan.missing if m not in weak_missing]
    words = [m for m in missing if " " not in m.strip()]
    phrases = [m for m in missing if " " in m.strip()]
    closest = " The states below are the closest evidence." if choice.keys else ""
    if words:
        parts.append("Found in no stored state: " + ", ".join(f"'{m}'" for m in words)
                     + " - the question's premise may be false." + closest)
    if phrases:
        parts.append("Never written this way in any stored state: " + ", ".join(f"'{m}'" for m in phrases)
                     + " - check the premise." + closest)
    if not choice.keys:
        parts.append("No stored state matches the question's terms.")
        return " ".join(parts)
    if wants_latest or kind == "dynamic":
        parts.append(sightings(choice, scan, by_key))
    for run in choice.runs:
        parts.append(run_walkthrough(run, by_key, error_width=ERROR_WIDTH[kind == "gotcha"]))
    for typed, seen, (t, i), time in choice.contrasts:
        parts.append(f"The run typed '{typed}', but {t} state {i} ({time[:16].replace('T', ' ')}) shows: {seen}")
    parts += quotes(choice, scan, by_key)
    return "\n".join(parts)


def sightings(choice: Choice, scan: Scan, by_key: dict[tuple[str, int], Step]) -> str:
    """'Newest first: X state 10 (2025-12-18 22:20) [latest sighting]; Y state 4 (2025-12-17 19:18) [older]'."""
    seen = []
    shown = {h.key for h in scan.latest} | {k for k, note in choice.notes.items() if note in ("latest sighting",
                                                                                               "older")}
    for key in (k for k in choice.keys if k in shown):
        step, hit = by_key.get(key), _find(scan, key)
        when = (step.time if step else hit.time if hit else "")
        seen.append((when, key))
    seen.sort(reverse=True)
    listed = [f"{t} state {i} ({when[:16].replace('T', ' ')})" + (f" [{choice.notes[(t, i)]}]"
              if choice.notes.get((t, i)) in ("latest sighting", "older") else "") for when, (t, i) in seen[:6]]
    return "The value may have changed over time; where it shows, newest first: " + "; ".join(listed) + "."


def quotes(choice: Choice, scan: Scan, by_key: dict[tuple[str, int], Step]) -> list[str]:
    """One line per chosen state with what its page says about the question; a repeat names its states only."""
    out: list[str] = []
    first_at: dict[str, int] = {}
    for key in choice.keys:
        step, hit = by_key.get(key), _find(scan, key)
        lines = step.lines if step else []
        if not lines:
            continue
        note = choice.notes.get(key, "")
        when = (step.time if step else hit.time if hit else "")[:16].replace("T", " ")
        where = f"{key[0]} state {key[1]} ({when})" + (f" [{note}]" if note else "")
        same = _IDS.sub("", " | ".join(lines))
        if same in first_at:
            out[first_at[same]] += f"; the same in {where}"
            continue
        if len(first_at) >= MAX_QUOTED:
            continue
        first_at[same] = len(out)
        out.append(f"{where}: " + " | ".join(lines))
    return out


def run_walkthrough(run: Run, by_key: dict[tuple[str, int], Step], *, error_width: int = 300) -> str:
    """'Run X (succeeded; goal: ...) steps - 0: click('156') [156 = link 'Sales'] ; 1: ...' from the detail steps."""
    outcome = {1: "succeeded", 0: "failed"}.get(run.ok, "outcome unknown")
    steps = [by_key[k] for k in sorted(by_key) if k[0] == run.t]
    moves = []
    for step in steps:
        move = f"{step.i}: {step.act}"
        if step.err:
            move += f" !! {step.err[:error_width]}"
        moves.append(move)
    head = f"Run {run.t} ({outcome}; goal: {run.goal})"
    return head + (" steps - " + " ; ".join(moves) if moves else "")
