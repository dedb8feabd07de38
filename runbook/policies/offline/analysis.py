"""The analysis the offline planner writes for the reader: the question's kind, the latest value and its older
sightings, terms found nowhere (a possible false premise), a procedure's steps, a gotcha's errors and what worked
after them. The pages themselves are the context's items, not quoted here: a quote repeated a state item the
planner adds anyway (measured on the tune split, C 8k: the same answer phrases, evidence .630 -> .652)."""

from __future__ import annotations

from collections.abc import Set

from ...core.choice import Choice
from ...core.scanout import Run, Scan, Step, find_hit

ERROR_WIDTH = (100, 300)
"""Characters of an error shown in a walkthrough: a procedure needs to know one happened, a gotcha what it said."""

KIND_NAMES = {
    "static": "a fact shown on a page",
    "dynamic": "a value that changes over time (the latest wins)",
    "procedure": "how to do something",
    "gotcha": "what goes wrong and how to get past it",
}


def write_analysis(
    kind: str,
    wants_latest: bool,
    scan: Scan,
    choice: Choice,
    steps: list[Step],
    *,
    weak_missing: Set[str] = frozenset(),
    premise_only: bool = False,
    premise_hints: tuple[str, ...] = (),
) -> str:
    """A few plain sentences: the question's kind, where the evidence is, latest vs older, missing terms, steps.
    `premise_only`: the terms found nowhere and no more (the evidence below is not the planner's own states);
    `premise_hints`: what the
    question's wording presupposes (QuestionAnalysis.possible_false_premise), passed on for the reader to verify."""
    by_key = {(s.trajectory_id, s.state_index): s for s in steps}
    parts = [f"Question kind: {KIND_NAMES.get(kind, kind)}."]
    if premise_hints:  # the same hints method R's analysis gives: C's analysis replaces R's, so it must keep them
        parts.append("Check the premise: " + "; ".join(premise_hints) + ".")
    missing = [m for m in scan.missing if m not in weak_missing]
    words = [m for m in missing if " " not in m.strip()]
    phrases = [m for m in missing if " " in m.strip()]
    closest = " The states below are the closest evidence." if choice.keys or premise_only else ""
    if words:
        parts.append(
            "Found in no stored state: "
            + ", ".join(f"'{m}'" for m in words)
            + " - the question's premise may be false."
            + closest
        )
    if phrases:
        parts.append(
            "Never written this way in any stored state: "
            + ", ".join(f"'{m}'" for m in phrases)
            + " - check the premise."
            + closest
        )
    if premise_only:
        return " ".join(parts)
    if not choice.keys:
        parts.append("No stored state matches the question's terms.")
        return " ".join(parts)
    if wants_latest or kind == "dynamic":
        parts.append(sightings(choice, scan, by_key))
        parts = [part for part in parts if part]
    for run in choice.runs:
        parts.append(run_walkthrough(run, by_key, error_width=ERROR_WIDTH[kind == "gotcha"]))
    for typed, seen, (t, i), time in choice.contrasts:
        parts.append(f"The run typed '{typed}', but {t} state {i} ({time[:16].replace('T', ' ')}) shows: {seen}")
    return "\n".join(parts)


def sightings(choice: Choice, scan: Scan, by_key: dict[tuple[str, int], Step]) -> str:
    """'Newest first: X state 10 (2025-12-18 22:20) [latest sighting]; Y state 4 (2025-12-17 19:18) [older]'."""
    seen = []
    shown = {h.key for h in scan.latest} | {
        k for k, note in choice.notes.items() if note in ("latest sighting", "older")
    }
    for key in (k for k in choice.keys if k in shown):
        step, hit = by_key.get(key), find_hit(scan, key)
        when = step.time if step else hit.time if hit else ""
        seen.append((when, key))
    seen.sort(reverse=True)
    listed = [
        f"{t} state {i} ({when[:16].replace('T', ' ')})"
        + (f" [{choice.notes[(t, i)]}]" if choice.notes.get((t, i)) in ("latest sighting", "older") else "")
        for when, (t, i) in seen[:6]
    ]
    if not listed:  # nothing shows the value more than once: no timeline to give
        return ""
    return "The value may have changed over time; where it shows, newest first: " + "; ".join(listed) + "."


def run_walkthrough(run: Run, by_key: dict[tuple[str, int], Step], *, error_width: int = 300) -> str:
    """'Run X (succeeded; goal: ...) steps - 0: click('156') [156 = link 'Sales'] ; 1: ...' from the detail steps."""
    outcomes: dict[int | None, str] = {1: "succeeded", 0: "failed"}
    outcome = outcomes.get(run.success, "outcome unknown")
    steps = [by_key[k] for k in sorted(by_key) if k[0] == run.trajectory_id]
    moves = []
    for step in steps:
        move = f"{step.state_index}: {step.action}"
        if step.error:
            move += f" !! {step.error[:error_width]}"
        moves.append(move)
    head = f"Run {run.trajectory_id} ({outcome}; goal: {run.goal})"
    return head + (" steps - " + " ; ".join(moves) if moves else "")
