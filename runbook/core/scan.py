"""The offline planner's first step in the sandbox: `scan` ranks states for a question (`detail` in core/detail.py
then reads the chosen ones). Both run inside the sandbox in one call of the program `rbplan` (core/plan.py), with
the core library alone (and Pillow when the image has it); scan_output holds JSON lines, most important first and
within a character budget, so the output parses line by line (each record written by the `to_json` of its type in
core/scanout.py, and read back by its `from_json`):

    {"type": "terms", "df": {pattern: [states, trajectories]}, "missing": [...], "sites": [...], "scope": [...]}
    {"type": "image", "t": id, "i": index, "d": hash bits apart, "px": grey difference}   (with an image)
    {"type": "latest", "t": id, "i": index, "s": score, "time": ...}     (newest first; 'current' questions)
    {"type": "state", "t": id, "i": index, "s": score, "time": ..., "ok": run succeeded, "err": 0|1, ...}
    {"type": "extra", ...}   a state covering what the best states leave out
    {"type": "traj", "t": id, "s": score, "gs": goal score, "head": 0-2, "ok": ..., "n": states,
     "ne": states with errors, "goal": ...}

Scoring (core/scoring.py): BM25 (core/weights.py's formula) over single states (one ripgrep pass with every
pattern, its `-o` output tallied per state), plus the trajectory's goal, the state's url and title, a bonus for
exact phrases and for states showing all the names the question gives, and a boost for the site the question
names. A question's own words are weighed by rarity. With `scope_sites` only those sites' trajectories are scanned
(reading every state file is most of a scan's time); a pattern found nowhere there is looked for in the rest before
it is called missing.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from .catalog import Catalog, StateKey, TrajectoryRow, load_catalog
from .errors import RbkError
from .images import NO_PILLOW, nearest_screenshots
from .layout import STATE_GLOB, TRAJECTORIES_DIR, trajectory_relpath
from .patterns import label, pattern_regex, python_regex
from .reader import default_store_dir
from .ripgrep import ripgrep_binary
from .scanout import Run, ScoredState
from .scoring import (
    FILLERS,
    Scores,
    StateScore,
    WeightedPatterns,
    anchor_patterns,
    complements,
    newest_strong,
    newest_with,
    page_words,
    prefer_trouble,
    score_states,
    site_matches,
    weights_of,
)

QUOTED_TERM_WEIGHT = 0.5
"""A question word that a goal has only inside its quotes (the text the agent was to type: 'Post my question, "what
is the recommended console to buy"') counts this much toward the goal's match: the task is what the goal says
outside them."""
_QUOTED = re.compile(r'"[^"]*"|\u201c[^\u201d]*\u201d')


# -- the ripgrep pass ------------------------------------------------------------------------------------------
def run_rg(
    root: str, regexes: list[str], dirs: Iterable[str] | None = None
) -> defaultdict[tuple[str, int], Counter[str]]:
    """{(dir, index): Counter(matched text, lower-cased)} for every state file matching any regex, tried in order:
    at one position the first pattern that matches wins, so longer phrases must come first. `dirs`: only these
    trajectories' folders (None: all)."""
    args = [
        ripgrep_binary(),
        "--no-config",
        "--no-ignore",
        "-o",
        "-i",
        "--null",
        "--no-line-number",
        "--no-heading",
        "-g",
        STATE_GLOB,
    ]
    for rx in regexes:
        args += ["-e", rx]
    paths = [TRAJECTORIES_DIR] if dirs is None else [trajectory_relpath(d) for d in sorted(dirs)]
    if not paths:
        return defaultdict(Counter)
    done = subprocess.run(args + ["--", *paths], cwd=root, capture_output=True)
    out = done.stdout
    if done.returncode == 2 and not out:  # no match at all and an error: the patterns, not the store, failed
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise RbkError(f"the scan's ripgrep pass failed: {said[-1] if said else 'exit code 2'}")
    found: defaultdict[tuple[str, int], Counter[str]] = defaultdict(Counter)
    for line, n in Counter(out.split(b"\n")).items():
        path, sep, match = line.partition(b"\0")
        if not sep:
            continue
        parts = path.decode("utf-8", "replace").split("/")
        if len(parts) != 4 or not parts[3][:-3].isdigit():
            continue
        found[(parts[1], int(parts[3][:-3]))][match.decode("utf-8", "replace").lower()] += n
    return found


def assign(found: dict[StateKey, Counter[str]], compiled: list[re.Pattern]) -> dict[StateKey, Counter[int]]:
    """{(dir, index): Counter(pattern index: tf)}: each matched text credited to every pattern found in it (a
    phrase's words count too)."""
    owners_of: dict[str, list[int]] = {}
    tfs: dict[tuple[str, int], Counter[int]] = {}
    for key, matches in found.items():
        tf: Counter[int] = Counter()
        for text, n in matches.items():
            owners = owners_of.get(text)
            if owners is None:
                owners = owners_of[text] = [k for k, rx in enumerate(compiled) if rx.search(text)]
            for k in owners:
                tf[k] += n
        if tf:
            tfs[key] = tf
    return tfs


# -- scoring ---------------------------------------------------------------------------------------------------
def in_scope(rows: dict[str, TrajectoryRow], sites: Iterable[str] | None) -> set[str] | None:
    """The trajectory folders of `sites` (None when no scope is asked for, or it names no stored site)."""
    if not sites:
        return None
    dirs = {d for d, row in rows.items() if row.site in set(sites)}
    return dirs or None


def scanned_folders(catalog: Catalog, params: ScanParams) -> set[str] | None:
    """The trajectory folders a scan reads: the sites' asked for, among the candidates of a large store (None:
    every folder)."""
    scope = in_scope(catalog.rows, params.scope_sites)
    if params.candidates is None:
        return scope
    runs = {catalog.folder_of[t] for t in params.candidates if t in catalog.folder_of}
    return (runs & scope or runs) if scope is not None else runs


TROUBLE = (
    r"(?-u:\b(?:errors?|fail(?:s|ed|ure)?|time[sd]? ?out|timeout|not found|no (?:records|results|matches)|"
    r"could ?n[o']t|cannot|can't|unable|instead|retry|again|did ?n[o']t|wrong|incorrect|intercepts?|"
    r"blocked|unexpected|mismatch)\b)"
)
"""Words with which pages, errors and the agent's thoughts say that something went wrong."""


@dataclass
class ScanParams:
    """What one scan looks for and how much it prints: the offline planner's request (its defaults are the
    planner's; a question changes only what its kind needs)."""

    patterns: list[dict] = field(default_factory=list)
    """The question's phrases and terms (runbook.policies.offline.terms: text, label, kind, stem, weight)."""
    max_chars: int = 3800
    """Characters printed: JSON runs ~2.2 characters a token, so scan and detail stay within the planner's view."""
    top: int = 30
    """Best states printed."""
    states_before_trajectories: int = 10
    """Best states printed before the best runs."""
    trajectories: int = 10
    """Best runs printed."""
    full: int = 3
    """The first states' records name the patterns they matched."""
    latest: bool = False
    """A 'current value' question: print the newest strong matches first."""
    latest_top: int = 6
    latest_pool: int = 200
    near_best: float = 0.3
    near_cov: float = 0.8
    """A newest strong match scores this share of the best state's score, and covers this share of its page."""
    complements: int = 3
    """States covering what the best states leave out."""
    prefer: str | None = None
    """'trouble': states whose action failed, in failed runs, rank higher (gotchas)."""
    answers: bool = False
    """States where the agent reported its answer score more (fact questions)."""
    pages: list = field(default_factory=list)
    """Menu paths the question gives ('Sales > Orders'): the pages their titles name score more."""
    scope_sites: list | None = None
    """Only these sites' states are scanned."""
    candidates: list[str] | None = None
    """A large store's runs worth reading (trajectory ids, core.recall.Recall.scan_candidates): only they are
    scanned, and only their catalog rows are loaded. None: every run."""
    present: list[int] = field(default_factory=list)
    """With `candidates`: the patterns whose words the store's index holds somewhere; one the candidates lack is
    then not called missing (the rest of the store is not read to find out)."""
    image: dict | None = None
    """The question image's signature (hash, thumb): the stored screenshots that look most alike come first."""
    image_top: int = 6

    @classmethod
    def from_dict(cls, params: dict) -> ScanParams:
        names = cls.__dataclass_fields__
        return cls(**{key: value for key, value in params.items() if key in names})


class Printer:
    """JSON lines up to a character budget, so the output the planner reads is never cut mid-line."""

    lines: list[str]

    def __init__(self, max_chars: int) -> None:
        self.max_chars, self.used, self.lines = max_chars, 0, []

    def add(self, rec: dict) -> bool:
        line = json.dumps(rec, ensure_ascii=False)
        if self.used + len(line) + 1 > self.max_chars:
            return False
        self.lines.append(line)
        self.used += len(line) + 1
        return True

    def flush(self) -> None:
        print("\n".join(self.lines))


@dataclass(frozen=True)
class ScanOutput:
    """What one scan prints, and every state it matched."""

    lines: list[str]
    """The JSON lines, most important first, within the character budget."""
    matched: dict[StateKey, Counter[int]]
    """Every state the scan matched: Counter(pattern index: matches), printed or not (the plan program's findings
    read beyond the printed best)."""

    def flush(self) -> None:
        print("\n".join(self.lines))


@dataclass(frozen=True)
class Matches:
    """What the ripgrep pass found, per state and per pattern."""

    tfs: dict[StateKey, Counter[int]]
    """How often each pattern matched, per state that matched one."""
    troubles: dict[StateKey, int]
    """Words of trouble, per state that matched anything (gotcha scans only: else empty)."""
    df: Counter[int]
    """States each pattern matched."""
    tdf: Counter[int]
    """Trajectories each pattern matched."""
    n_states: int
    """States scanned."""
    scope: set[str] | None
    """The trajectory folders scanned (None: all)."""
    outside: set[int]
    """Patterns found nowhere in scope but elsewhere in the store: not missing."""


def scan(params: dict) -> None:
    """Rank every state for the question's patterns and print the best, as JSON lines."""
    scan_output(ScanParams.from_dict(params)).flush()


def scan_output(params: ScanParams, catalog: Catalog | None = None) -> ScanOutput:
    """What scan prints, and every state it matched; `catalog`: load_catalog's result when the caller has it."""
    root = default_store_dir()
    catalog = catalog or load_catalog(root, only=params.candidates)
    items = params.patterns
    regexes = [pattern_regex(item) for item in items]
    compiled = [python_regex(rx) for rx in regexes]
    found = find_matches(root, params, catalog, regexes, compiled)
    sites = site_matches(catalog.rows, compiled, [k for k, it in enumerate(items) if it.get("kind") == "term"])
    out = Printer(params.max_chars)
    out.add(terms_record(params, catalog, found, sites))
    looks = print_images(out, root, catalog, params) if params.image else []
    if looks and not sites:  # the pictured app is the one asked about
        sites = {catalog.rows[catalog.folder_of[looks[0].trajectory_id]].site: 1.0}
    patterns = WeightedPatterns(items, compiled, weights_of(items, found.df, found.n_states))
    anchors = anchor_patterns(items, compiled, found.df, catalog.rows)
    pages = page_words(params.pages)
    scores = score_states(
        found.tfs, catalog, patterns, sites=sites, answers=params.answers, anchors=anchors, pages=pages
    )
    if params.prefer == "trouble":
        prefer_trouble(scores, catalog, found.troubles)
    # ripgrep's file order varies from run to run: the state itself breaks ties, so the plan is deterministic
    ranked = sorted(scores, key=lambda key: (-scores[key].score, catalog.states[key].time, key))
    newest: list[StateKey] = []
    if ranked:  # where the question's names show last: the current value, whatever the question's kind
        newest = newest_with(anchors, found.tfs, catalog, sites) if anchors else []
        if not newest and params.latest:
            newest = newest_strong(ranked, scores, catalog.states, params)
    extras = complements(ranked, scores, patterns.idf, params.complements)
    # runs of the scanned sites only: a goal elsewhere that shares a word ('task') is not a run of the question's;
    # in the catalog's order, not the scope set's (a set's order changes with each process's hash seed, and runs
    # that tie were then walked through in a different order from one query to the next)
    rows = catalog.rows if found.scope is None else {d: row for d, row in catalog.rows.items() if d in found.scope}
    runs = run_records(ranked, scores, rows, catalog, patterns, params.trajectories)
    troubles = found.troubles or None
    print_states(
        out,
        params,
        latest=[
            scored_state(key, scores[key], catalog, items)
            for key in newest[: params.latest_top if params.latest else 2]
        ],
        extras=[scored_state(key, scores[key], catalog, items) for key in extras],
        best=[scored_state(key, scores[key], catalog, items, troubles) for key in ranked[: params.top]],
        runs=runs,
    )
    return ScanOutput(out.lines, found.tfs)


def find_matches(
    root: str, params: ScanParams, catalog: Catalog, regexes: list[str], compiled: list[re.Pattern]
) -> Matches:
    """One ripgrep pass with every pattern (and the words of trouble for a gotcha) over the scanned states."""
    items = params.patterns
    trouble = len(items) if params.prefer == "trouble" else None
    scope = scanned_folders(catalog, params)
    longest_first = [regexes[k] for k in sorted(range(len(items)), key=lambda k: -len(items[k]["text"]))]
    tfs = assign(
        run_rg(root, longest_first + ([TROUBLE] if trouble is not None else []), scope),
        compiled + ([python_regex(TROUBLE)] if trouble is not None else []),
    )
    troubles = {key: tf.pop(trouble, 0) for key, tf in tfs.items()} if trouble is not None else {}
    tfs = {key: tf for key, tf in tfs.items() if tf}
    n_states = max(1, sum(1 for key in catalog.states if scope is None or key[0] in scope))
    df = Counter(k for tf in tfs.values() for k in tf)
    outside = set()
    if scope is not None and params.candidates is not None:
        outside = {k for k in params.present if not df[k]}
    elif scope is not None:
        unseen = [k for k in range(len(items)) if not df[k]]
        elsewhere = run_rg(root, [regexes[k] for k in unseen], set(catalog.rows) - scope) if unseen else {}
        outside = {k for k in unseen if any(compiled[k].search(text) for found in elsewhere.values() for text in found)}
    per_trajectory: defaultdict[str, set[int]] = defaultdict(set)
    for (d, _), tf in tfs.items():
        per_trajectory[d].update(tf)
    tdf = Counter(k for ks in per_trajectory.values() for k in ks)
    return Matches(tfs, troubles, df, tdf, n_states, scope, outside)


def terms_record(params: ScanParams, catalog: Catalog, found: Matches, sites: dict[str, float]) -> dict:
    """The scan's first line: how often each pattern was found, the ones found nowhere, the sites named."""
    items = params.patterns
    return {
        "type": "terms",
        "n_states": found.n_states,
        "n_trajectories": len(catalog.rows),
        "sites": sorted(sites),
        "df": {label(items[k]): [found.df[k], found.tdf[k]] for k in range(len(items))},
        "missing": [label(items[k]) for k in range(len(items)) if not found.df[k] and k not in found.outside],
        **({"scope": sorted(params.scope_sites or ())} if found.scope is not None else {}),
    }


def print_images(out: Printer, root: str, catalog: Catalog, params: ScanParams) -> list[ScoredState]:
    """The stored screenshots that look most like the question's image, printed (or why there are none)."""
    assert params.image is not None
    looks = nearest_screenshots(root, catalog, params.image, params.image_top)
    if looks is None:
        out.add({"type": "image", "error": NO_PILLOW})
        return []
    for hit in looks:
        out.add(hit.image_json())
    return looks


def print_states(
    out: Printer,
    params: ScanParams,
    *,
    latest: list[ScoredState],
    extras: list[ScoredState],
    best: list[ScoredState],
    runs: list[Run],
) -> None:
    """The scan's records in their order: the newest strong states, the complements, then the best states with the
    best runs after the first few (in case the output is cut short); the first few best states in full."""
    for hit in latest:
        out.add(hit.to_json("latest"))
    for hit in extras:
        out.add(hit.to_json("extra", full=True))
    runs_after = min(len(best), params.states_before_trajectories)
    for n, hit in enumerate(best[:runs_after]):
        out.add(hit.to_json(full=n < params.full))
    for run in runs:
        out.add(run.to_json())
    for n, hit in enumerate(best[runs_after:], runs_after):
        out.add(hit.to_json(full=n < params.full))


def scored_state(
    key: StateKey, score: StateScore, catalog: Catalog, items: list[dict], troubles: dict[StateKey, int] | None = None
) -> ScoredState:
    """One state as the scan prints it, compact (the planner reads about 2,000 tokens); `troubles`: its words of
    trouble are printed too."""
    m, r = catalog.states[key], catalog.rows[key[0]]
    return ScoredState(
        trajectory_id=r.id,
        state_index=key[1],
        score=round(score.score, 1),
        coverage=round(score.coverage, 2),
        matched=[label(items[k]) for k in score.matched],
        time=m.time[:19],
        url=m.url[:80],
        success=r.success,
        n_states=r.n_states,
        error=bool(m.error.strip()),
        trouble=troubles.get(key, 0) if troubles is not None else None,
    )


def run_records(
    ranked: list[StateKey],
    scores: Scores,
    rows: dict[str, TrajectoryRow],
    catalog: Catalog,
    patterns: WeightedPatterns,
    limit: int,
) -> list[Run]:
    """The best runs of `rows` two ways: by their three best states, and by how well their goal matches the
    question.

    Goal terms are weighed by rarity among goals; `head` counts how many of the goal's first two words (its action
    and what it acts on: 'Cancel order', 'Create a milestone') are question terms.
    """
    items, compiled = patterns.items, patterns.compiled
    per = defaultdict(list)
    for key in ranked:
        per[key[0]].append(scores[key].score)
    totals = {d: sum(sorted(v, reverse=True)[:3]) for d, v in per.items()}
    own = [k for k, it in enumerate(items) if not it.get("derived") or it.get("synonym")]  # pairs would count twice
    goals = {d: [k for k in own if compiled[k].search(r.goal)] for d, r in rows.items()}
    gdf = Counter(k for ks in goals.values() for k in ks)
    gidf = weights_of(items, gdf, len(rows))
    terms = [k for k, it in enumerate(items) if it.get("kind") == "term"]
    goal_score, heads = {}, {}
    for d, r in rows.items():
        words = [w for w in re.findall(r"[A-Za-z]+", r.goal) if w.lower() not in FILLERS][:2]
        heads[d] = sum(1 for w in words if any(compiled[k].fullmatch(w) for k in terms))
        task = _QUOTED.sub(" ", r.goal)
        goal_score[d] = sum(
            gidf[k] * (1.0 if k not in terms or compiled[k].search(task) else QUOTED_TERM_WEIGHT) for k in goals[d]
        )
    by_states = sorted(totals, key=lambda d: -totals[d])[:limit]
    by_goal = sorted(
        (d for d in rows if goal_score[d] > 0),
        key=lambda d: (-(goal_score[d] * (1 + 0.5 * heads[d])), -totals.get(d, 0)),
    )[:limit]
    errors = Counter(d for (d, _), m in catalog.states.items() if m.error.strip())
    interleaved = [d for pair in zip(by_goal, by_states) for d in pair]
    interleaved += by_goal[len(by_states) :] + by_states[len(by_goal) :]
    return [  # both orders near the top, in case the output is cut short
        Run(
            trajectory_id=rows[d].id,
            score=round(totals.get(d, 0), 1),
            goal_score=round(goal_score[d], 1),
            head=heads[d],
            goal=rows[d].goal[:60],
            success=rows[d].success,
            n_states=rows[d].n_states,
            n_errors=errors[d],
        )
        for d in dict.fromkeys(interleaved)
    ]
