"""The offline planner's one call in the sandbox (the program `rbplan`): scan, choose, detail. Each call costs a
docker exec, an interpreter and these imports (~0.2 s measured), and scan and detail as two calls paid it twice and
loaded the catalog twice.

    rbplan --request '{"scan": {...ScanParams}, "kind": "static", "wants_latest": false, "quote_lines": 2}'

prints one JSON line per record: the choice first (the states a question of its kind needs, chosen with
runbook.core.choice on the very scan lines printed after it; the planner reads it and never recomputes it), then the
scan's lines, then detail's `step` lines for the chosen states.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from .catalog import Catalog, StateKey, StateMeta, TrajectoryRow, load_catalog
from .choice import Choice, choice_record, choose
from .detail import DetailParams, described_action, detail_output, read_state
from .findings import (
    COUNT_QUESTION,
    RECOVERY_AHEAD,
    Attempt,
    View,
    findings,
    recovery_findings,
    run_comparison,
    strong_phrases,
)
from .layout import POOLS_DIR
from .pools import PoolError, PoolSnapshot
from .question import QuestionAnalysis
from .reader import default_store_dir
from .scan import ScanParams, scan_output
from .scanout import Scan, read_scan
from .scoring import names_page, page_words

FINDING_STATES = 40
"""States whose pages the findings read: the chosen ones, then the best the scan ranked."""
COMPARED_RUNS, RUN_STEPS = 5, 40
"""Runs looked at for a run of the same task with the other outcome (the walked-through ones, then the scan's best);
steps of each read."""
STEP_CHARS = 160
"""Room the detail output gets for each step of a walked-through run beyond the states chosen."""
RECOVERY_STATES = 8
"""Failed steps a gotcha's recovery finding follows (the scan's best that failed): at most MAX_FINDINGS are shown,
the rest stand in for failures already shown."""


@dataclass
class PlanRequest:
    """What the offline planner asks of one `rbplan` call."""

    scan: ScanParams
    kind: str
    """The question's kind (runbook.core.question.KINDS): what the choice picks."""
    wants_latest: bool = False
    quote_lines: int = 2
    """Page lines quoted per chosen state (a run walked through speaks through its actions instead)."""
    detail: DetailParams = field(default_factory=DetailParams)
    """How the chosen states are read (its states and patterns are filled in here)."""
    analysis: dict | None = None
    """The question as the host analysed it (QuestionAnalysis's fields): what the findings work from."""
    recall_states: list[list] = field(default_factory=list)
    """[trajectory id, state index] of the pages method R's evidence shows, best first: the findings read them too
    (R ranks pages by their words, the scan by the question's patterns; each finds pages the other misses)."""
    recall_runs: list[str] = field(default_factory=list)
    """The runs whose notes method R ranks best for the question, best first: they weigh in when a run is picked."""
    slice_docs: dict[str, list[int]] = field(default_factory=dict)
    """For a large store's candidate runs: {trajectory id: [slice document of its state 0, states]}, so the findings
    find the chosen pages without reading every document (core.recall.ScanCandidates)."""
    pools_stamp: int | None = None
    """The pools' stamp `slice_docs` is of: another stamp's are not used."""

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, obj: dict) -> PlanRequest:
        return cls(
            scan=ScanParams.from_dict(obj.get("scan") or {}),
            kind=str(obj.get("kind") or "static"),
            wants_latest=bool(obj.get("wants_latest")),
            quote_lines=int(obj.get("quote_lines", 2)),
            detail=DetailParams.from_dict(obj.get("detail") or {}),
            analysis=obj.get("analysis"),
            recall_states=[[str(t), int(i)] for t, i in obj.get("recall_states") or []],
            recall_runs=[str(t) for t in obj.get("recall_runs") or []],
            slice_docs={str(t): [int(d), int(n)] for t, (d, n) in (obj.get("slice_docs") or {}).items()},
            pools_stamp=obj.get("pools_stamp"),
        )

    def runs_read(self) -> list[str] | None:
        """The runs whose catalog rows the plan loads: a large store's candidates and the runs of R's evidence
        (None: all)."""
        if self.scan.candidates is None:
            return None
        return [*self.scan.candidates, *(t for t, _ in self.recall_states), *self.recall_runs]


def plan(request: PlanRequest) -> None:
    """Scan, choose, detail: print the choice, the scan's lines and the chosen states' details."""
    catalog = load_catalog(default_store_dir(), only=request.runs_read())
    scanned = scan_output(request.scan, catalog)
    # chosen on exactly the lines printed, so every run and state it names is in the output
    scan = read_scan("\n".join(scanned.lines))
    choice = choose(request.kind, request.wants_latest, scan, request.recall_runs)
    print(json.dumps(choice_record(choice), ensure_ascii=False))
    texts = plan_findings(request, choice, scan, catalog, scanned.matched)
    if request.kind in ("gotcha", "procedure"):
        texts = compared_runs(choice, scan, catalog) + texts
    if request.kind == "gotcha":
        texts += recovery_findings(failed_steps(scan, catalog))
    for text in texts:
        print(json.dumps({"type": "finding", "text": text}, ensure_ascii=False))
    scanned.flush()
    if choice.keys:
        detail_output(detail_request(choice, scan, request), catalog).flush()


def compared_runs(choice: Choice, scan: Scan, catalog: Catalog) -> list[str]:
    """For the best runs the scan found (those walked through first): a run of the same task with the other outcome,
    and what the two did differently (core.findings.run_comparison)."""
    rows, by_id = catalog.rows, catalog.folder_of
    by_task: dict[str, list[TrajectoryRow]] = {}
    for row in rows.values():
        by_task.setdefault(task_key(row.goal), []).append(row)
    runs = [r.trajectory_id for r in choice.runs] + [r.trajectory_id for r in scan.runs[:COMPARED_RUNS]]
    for run in list(dict.fromkeys(runs)):
        found_row = rows.get(by_id.get(run) or "")
        if found_row is None or found_row.success is None or found_row.success not in (0, 1):
            continue
        row, success = found_row, found_row.success
        other = next((r for r in by_task.get(task_key(row.goal), []) if r.success == 1 - success), None)
        if other is None:
            continue
        failed, succeeded = (row, other) if success == 0 else (other, row)
        found = run_comparison(run_steps(failed, catalog), run_steps(succeeded, catalog), row.goal)
        if found:
            return found
    return []


def task_key(goal: str) -> str:
    """A goal as the same task in another run reads it: case, spacing and punctuation aside."""
    return " ".join(re.findall(r"[a-z0-9@.]+", goal.lower()))


def run_steps(row: TrajectoryRow, catalog: Catalog) -> list[Attempt]:
    """Every step of a run, each described by the controls it used."""
    root = default_store_dir()
    steps = []
    for i in range(min(int(row.n_states or 0), RUN_STEPS)):
        m = catalog.states.get((row.dir, i))
        if m is None:
            break
        _, lines = read_state(root, row.dir, i)
        steps.append(Attempt(row.id, i, m.time, described_action(m.action, lines), m.error))
    return steps


def failed_steps(scan: Scan, catalog: Catalog) -> list[list[Attempt]]:
    """The failed steps a gotcha is about (the scan's best states with an error, ranked for trouble), each followed
    by the next RECOVERY_AHEAD steps of its run, read from the catalog and the state files."""
    root = default_store_dir()
    keys = [h.key for h in scan.states if h.error]  # ranked by how well they match the question, trouble first
    out = []
    for t, i in list(dict.fromkeys(keys))[:RECOVERY_STATES]:
        steps = []
        for j in range(i, i + 1 + RECOVERY_AHEAD):
            m = catalog.state(t, j)
            if m is None:
                break
            _, lines = read_state(root, catalog.folder_of[t], j)
            steps.append(Attempt(t, j, m.time, described_action(m.action, lines), m.error))
        if steps and steps[0].error:
            out.append(steps)
    return out


def named_page_states(
    analysis: QuestionAnalysis, rows: dict[str, TrajectoryRow], meta: dict[StateKey, StateMeta]
) -> list[tuple[str, int]]:
    """For a count question that names a page by its menu path ('Sales > Orders'): every state of that page, newest
    first (a count depends on the filters each view had set; the best-scored views are the filtered ones)."""
    if not analysis.menu_paths or not COUNT_QUESTION.search(analysis.question):
        return []
    paths = page_words([list(path) for path in analysis.menu_paths])
    named = [(m.time, (rows[d].id, i)) for (d, i), m in meta.items() if d in rows and names_page(m.title, paths)]
    return [key for _, key in sorted(named, reverse=True)[:FINDING_STATES]]


def phrase_states(
    request: PlanRequest,
    strong: tuple[str, ...],
    matched: dict[StateKey, Counter[int]],
    rows: dict[str, TrajectoryRow],
    meta: dict[StateKey, StateMeta],
) -> list[tuple[str, int]]:
    """Every state the scan matched with one of the question's strong phrases, newest first: where a value that
    changes was last seen (the best-scored states are not the newest ones)."""
    wanted = [k for k, item in enumerate(request.scan.patterns) if (item.get("label") or item["text"]) in strong]
    if not wanted:
        return []
    found = [(meta[key].time, (rows[key[0]].id, key[1])) for key, tf in matched.items()
             if key in meta and key[0] in rows and any(tf.get(k) for k in wanted)]  # fmt: skip
    return [key for _, key in sorted(found, reverse=True)[:FINDING_STATES]]


def plan_findings(
    request: PlanRequest,
    choice: Choice,
    scan: Scan,
    catalog: Catalog,
    matched: dict[tuple[str, int], Counter[int]] | None = None,
) -> list[str]:
    """What can be worked out from the pages of the states chosen and the best ones scanned (core.findings), read
    from the structure the pools hold; none when the request carries no analysis or the store has no pools."""
    if not request.analysis:
        return []
    analysis = QuestionAnalysis.from_dict(request.analysis)
    rows, meta = catalog.rows, catalog.states
    root = default_store_dir()
    try:
        snapshot = PoolSnapshot(os.path.join(root, POOLS_DIR))
        doc_of = slice_docs(snapshot, request)
    except (OSError, PoolError, ValueError):
        return []
    strong = strong_phrases(analysis)
    recalled = [(t, i) for t, i in request.recall_states]
    keys = list(dict.fromkeys(list(choice.keys) + recalled + [h.key for h in scan.latest + scan.states]))
    keys = keys[:FINDING_STATES]
    keys += named_page_states(analysis, rows, meta) + phrase_states(request, strong, matched or {}, rows, meta)
    keys = list(dict.fromkeys(keys))
    views = []
    for t, i in keys:
        n, m = doc_of(t, i), catalog.state(t, i)
        if n is None or m is None:
            continue
        try:
            header, page = snapshot.page(n)
        except (OSError, PoolError, ValueError):
            continue
        best = [b.text for b in page.blocks if any(p in b.text for p in strong)]
        views.append(View(t, i, m.time, header.get("title", ""), page, best))
    return findings(analysis, views)


def slice_docs(snapshot: PoolSnapshot, request: PlanRequest) -> Callable[[str, int], int | None]:
    """Which slice document holds a current state: worked out from each run's first document when the host read
    them at this stamp (a large store's candidates, see core.recall.ScanCandidates), else looked up among every
    document (reading them took 1.5 s at 179,277 states)."""
    every: dict[tuple[str, int], int] = {}

    def from_every(t: str, i: int) -> int | None:
        if not every:
            every.update(snapshot.state_docs())
        return every.get((t, i))

    if not request.slice_docs or request.pools_stamp != snapshot.stamp:
        return from_every
    first = request.slice_docs

    def from_first(t: str, i: int) -> int | None:
        if t not in first:  # a run the host gave no number for: looked up among every document
            return from_every(t, i)
        start, count = first[t]
        return start + i if 0 <= i < count else None

    return from_first


def detail_request(choice: Choice, scan: Scan, request: PlanRequest) -> DetailParams:
    """detail's params for the chosen states: a walked-through run speaks through its actions; the other states
    through their best lines, quoted with weights by rarity."""
    walked = {run.trajectory_id for run in choice.runs}
    states = [[t, i, request.quote_lines if t not in walked else 0] for t, i in choice.keys]
    extra = []
    if choice.run is not None:  # the run walked through first is read whole, every step (its actions only)
        run = choice.run.trajectory_id
        extra = [[run, i, 0] for i in range(min(choice.run.n_states, RUN_STEPS)) if (run, i) not in choice.keys]
    return DetailParams(
        states=states + extra,
        patterns=weighted(request.scan.patterns, scan),
        max_chars=request.detail.max_chars + STEP_CHARS * len(extra),
        after=request.detail.after,
    )


def weighted(patterns: list[dict], scan: Scan) -> list[dict]:
    """The patterns with weights by rarity (from the scan's counts), so that quoted lines favour rare terms."""
    total = max(1, scan.n_states)
    out = []
    for p in patterns:
        states = (scan.df.get(p.get("label", p["text"])) or [0])[0]
        rarity = math.log(1 + (total - states + 0.5) / (states + 0.5))
        out.append({**p, "weight": round(p.get("weight", 1.0) * rarity * (2 if p["kind"] == "phrase" else 1), 3)})
    return out


def request_parser() -> argparse.ArgumentParser:
    """`rbplan`'s arguments (the agent's `plan` tool gives --request)."""
    parser = argparse.ArgumentParser(prog="rbplan", description=__doc__.split("\n\n")[0])
    parser.add_argument("--request", help="the PlanRequest as one JSON object (default: read standard input)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """`rbplan --request JSON` (or the JSON on standard input)."""
    args = request_parser().parse_args(argv)
    try:
        obj = json.loads(args.request if args.request is not None else sys.stdin.read())
    except json.JSONDecodeError as exc:
        print(f"rbplan: the request is not JSON: {exc}", file=sys.stderr)
        return 2
    plan(PlanRequest.from_json(obj))
    return 0
