"""What the offline planner picks from its scan (scanout.py reads the records). `rbplan` chooses with it inside the
sandbox, reads the chosen states in the same call and prints the choice as one JSON line (choice_record), which the
planner on the host reads back (read_choice) for its analysis and spans: chosen once, never recomputed.

Choices per question kind (a question image's look-alike screenshots always come first):

    static     the best-scoring states (at most 3 of one run) and the last state of the run whose goal asks the
               question, where that agent reported its answer
    dynamic    the newest states that show the question's names (or cover nearly as much of it as the best),
               then the best older ones, labelled older
    procedure  the run that best shows the workflow (its goal's action and object, success, few errors), whole
               or cut around its best states, a close runner-up, then the best other states
    gotcha     the run that best matches the question, then the best match among those that failed or hit errors,
               with its errors and the states after them, then the best other states (the scan ranks trouble
               higher for these)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .scanout import Run, Scan, ScoredState, find_hit, json_lines

MAX_STATES = 20
"""At most this many states across all spans (the finish contract)."""
STATIC_STATES = 6
PER_RUN = 3
"""At most this many of the best states from one run: neighbouring states mostly show the same page."""
DYNAMIC_STATES = 6
IMAGE_STATES, IMAGE_BITS, IMAGE_GREY = 3, 4, 0.02
"""Screenshots taken as the question's page: at most 3, within 4 hash bits and 0.02 grey levels of the closest."""
PROCEDURE_RUN_STATES = 10
"""A procedure's best run is returned whole up to this length; a longer one is cut around its best states."""
RUNNER_UP, RUNNER_UP_STATES = 0.85, 6
"""A second run scoring this close to the best is added too, cut to this many states around its best ones."""
RECALL_BOOST = 1.0
"""A run whose note method R ranks first scores twice as much when a run is picked, the second 1.5 times, ..."""
GOTCHA_RUN_STATES = 8
GOTCHA_STATES = 12
GOTCHA_BEST = 2
"""A gotcha's two best-scoring states lead when they belong to neither run walked through and outscore every state
of those runs: the page or thought that says what was in the way may be elsewhere (measured on dev: two runs' windows
filled the choice, and the two states whose thoughts named the map's starting view were left out). Without the
outscoring rule they displaced the matching run's page of stale filters on four generated questions."""


LOOKS_LIKE_THE_IMAGE = "looks like the question's image"
"""The note on a state picked for its screenshot: such states lead the context (the question points at them)."""


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

    @property
    def image_states(self) -> list[tuple[str, int]]:
        """The states picked because they look like the question's image, best first."""
        return [key for key in self.keys if self.notes.get(key) == LOOKS_LIKE_THE_IMAGE]

    def add(self, key: tuple[str, int], note: str = "") -> bool:
        if key in self.keys or len(self.keys) >= MAX_STATES:
            return False
        self.keys.append(key)
        if note:
            self.notes[key] = note
        return True


def choose(kind: str, wants_latest: bool, scan: Scan, recall_runs: Sequence[str] = ()) -> Choice:
    """The states to hand back for a question of `kind`, from what the scan found; `recall_runs`: the runs whose
    notes method R ranks best for the question, best first (their ranking weighs in when a run is picked)."""
    choice = Choice()
    pick_images(scan, choice)
    boost = _recall_boost(recall_runs)
    if kind == "procedure":
        pick_procedure(scan, choice, boost)
    elif kind == "gotcha":
        pick_gotcha(scan, choice, boost)
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
    alike = [
        h
        for h in scan.images
        if (h.hash_bits or 0) <= (best.hash_bits or 0) + IMAGE_BITS
        and (h.grey or 0.0) <= (best.grey or 0.0) + IMAGE_GREY
    ][:IMAGE_STATES]
    text = {h.key: h.score for h in scan.states}
    alike.sort(key=lambda h: -text.get(h.key, 0.0))
    for hit in alike:
        choice.add(hit.key, LOOKS_LIKE_THE_IMAGE)


def pick_best(hits: list[ScoredState], choice: Choice, limit: int) -> None:
    """Best-scoring states, at most PER_RUN of one run: a run's neighbouring states mostly show the same page."""
    per_run: dict[str, int] = {}
    for t, _ in choice.keys:
        per_run[t] = per_run.get(t, 0) + 1
    for hit in hits:
        if len(choice.keys) >= limit:
            break
        if per_run.get(hit.trajectory_id, 0) >= PER_RUN or hit.key in choice.keys:
            continue
        per_run[hit.trajectory_id] = per_run.get(hit.trajectory_id, 0) + 1
        choice.add(hit.key)


def pick_goal_answer(scan: Scan, choice: Choice) -> None:
    """The last state of the run whose goal asks what the question asks: where that agent reported its answer."""
    asked = [r for r in scan.runs if r.goal_score > 0 and r.head > 0]
    if not asked:
        return
    run = max(asked, key=lambda r: (r.goal_score * (1 + 0.5 * r.head), r.success == 1, r.score))
    choice.add((run.trajectory_id, run.n_states - 1), "end of the run whose goal matches the question")


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
        found = find_hit(scan, key)
        if found and newest and found.time < newest and key not in choice.notes:
            choice.notes[key] = "older"


def _recall_boost(recall_runs: Sequence[str]) -> dict[str, float]:
    """{run: factor} for the runs whose notes method R ranks best: its notes' words (goal, controls, what the pages
    said) found them, the scan's goal and pages another way; both count."""
    out: dict[str, float] = {}
    for rank, run in enumerate(dict.fromkeys(recall_runs)):
        out.setdefault(run, 1 + RECALL_BOOST / (1 + rank))
    return out


def pick_procedure(scan: Scan, choice: Choice, boost: dict[str, float] | None = None) -> None:
    """The run that best shows the workflow (goal, pages, success, few errors, R's note ranking), whole; then the
    best other states."""
    best_states = max((r.score for r in scan.runs), default=0.0)
    boost = boost or {}

    def score(r: Run) -> float:
        return r.workflow_score(best_states) * boost.get(r.trajectory_id, 1.0)

    ranked = sorted(scan.runs, key=lambda r: -score(r))
    if ranked:
        choice.runs.append(ranked[0])
        for i in run_window(scan, ranked[0], PROCEDURE_RUN_STATES):
            choice.add((ranked[0].trajectory_id, i))
    if len(ranked) > 1 and score(ranked[1]) >= RUNNER_UP * score(ranked[0]):
        choice.runs.append(ranked[1])  # a close second may be the workflow meant
        for i in run_window(scan, ranked[1], RUNNER_UP_STATES):
            choice.add((ranked[1].trajectory_id, i))
    pick_best(scan.states, choice, len(choice.keys) + 2)


def pick_gotcha(scan: Scan, choice: Choice, boost: dict[str, float] | None = None) -> None:
    """The run that best matches the question (its steps show what was in the way even without an error), then the
    one that best matches among those that failed or hit errors, whole when short, else its errors with the state
    after each and its last state; then the best other states (already ranked for trouble). States of other runs
    that outscore every state of the runs walked through lead."""
    best_states = max((r.score for r in scan.runs), default=0.0)
    boost = boost or {}
    run = max(scan.runs, key=lambda r: r.trouble_score(best_states) * boost.get(r.trajectory_id, 1.0), default=None)
    matched = max(
        scan.runs, key=lambda r: r.workflow_score(best_states) * boost.get(r.trajectory_id, 1.0), default=None
    )
    walked = {r.trajectory_id for r in (run, matched) if r is not None}
    walked_best = max((h.score for h in scan.states if h.trajectory_id in walked), default=0.0)
    for hit in scan.states[:GOTCHA_BEST]:
        if hit.trajectory_id not in walked and hit.score > walked_best:
            choice.add(hit.key, "matches the question best")
    if matched is not None and run is not None and matched.trajectory_id != run.trajectory_id:
        # the run the question is about may hit no error: what was in its way shows in its steps (a stale filter);
        # measured: first the best-matching run, then the troubled one, found more gotcha phrases on the generated
        # sets than either alone, or than the matching run only when it matched 1.2x or 1.5x better
        choice.runs.append(matched)
        for i in run_window(scan, matched, GOTCHA_RUN_STATES):
            choice.add((matched.trajectory_id, i))
    if run is not None:
        choice.runs.append(run)
        errors = [h.state_index for h in scan.states if h.trajectory_id == run.trajectory_id and h.error]
        if run.n_states <= GOTCHA_RUN_STATES:
            indices = list(range(run.n_states))
        else:
            indices = sorted({j for i in errors for j in (i, i + 1) if j < run.n_states} | {run.n_states - 1})
            indices = indices[:GOTCHA_RUN_STATES] or run_window(scan, run, GOTCHA_RUN_STATES)
        for i in indices:
            choice.add((run.trajectory_id, i))
    for hit in scan.states[:8]:
        if len(choice.keys) >= GOTCHA_STATES:
            break
        choice.add(hit.key)
        if hit.error and hit.state_index + 1 < hit.n_states:
            choice.add((hit.trajectory_id, hit.state_index + 1))


def run_window(scan: Scan, run: Run, limit: int) -> list[int]:
    """A run's states: all of them when short, else `limit` states around the ones that scored."""
    if run.n_states <= limit:
        return list(range(run.n_states))
    scored = sorted((h for h in scan.states if h.trajectory_id == run.trajectory_id), key=lambda h: -h.score)
    center = scored[0].state_index if scored else run.n_states - 1
    start = max(0, min(center - limit // 2, run.n_states - limit))
    return list(range(start, start + limit))


def choice_record(choice: Choice) -> dict:
    """The choice as the line `rbplan` prints: the states in order, the note on each, the runs walked through."""
    return {
        "type": "choice",
        "keys": [list(key) for key in choice.keys],
        "notes": [[t, i, note] for (t, i), note in choice.notes.items()],
        "runs": [run.trajectory_id for run in choice.runs],
    }


def read_choice(output: str, scan: Scan) -> Choice | None:
    """The choice `rbplan` printed (its runs taken from the scan printed with it); None when there is none."""
    record = next((rec for rec in json_lines(output) if rec.get("type") == "choice"), None)
    if record is None:
        return None
    runs = {run.trajectory_id: run for run in scan.runs}
    return Choice(
        keys=[(t, int(i)) for t, i in record.get("keys", [])],
        notes={(t, int(i)): note for t, i, note in record.get("notes", [])},
        runs=[runs[t] for t in record.get("runs", []) if t in runs],
    )
