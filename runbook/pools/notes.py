"""Per-trajectory notes, written deterministically from the states: a procedure note and a hints note."""

from __future__ import annotations

from urllib.parse import urlsplit

from ..core.actions import action_name, describe, error_gist, split_actions, typed_value
from ..trajectory.model import Trajectory

FINAL_ACTIONS = {"send_msg_to_user", "done", "report_infeasible", "stop", "answer"}
NAVIGATION_NOISE = {"scroll", "noop", "wait", "take_note", "calculate", "find_elements", "search_page"}


def short_url(url: str) -> str:
    """The part of a URL that tells pages apart: path, query and fragment, no scheme or host."""
    if not url:
        return ""
    parts = urlsplit(url)
    out = parts.path or "/"
    if parts.query:
        out += "?" + parts.query
    if parts.fragment:
        out += "#" + parts.fragment
    return out if len(out) <= 90 else out[:87] + "..."


def outcome_word(trajectory: Trajectory) -> str:
    ok = trajectory.succeeded
    return "successful run" if ok else ("failed run" if ok is False else "run of unknown outcome")


def step_lines(trajectory: Trajectory) -> list[tuple[int, str]]:
    """(state index, readable action) for every action taken, repeats folded into one line with a count."""
    out: list[tuple[int, str]] = []
    last_url = None
    for state in trajectory.states:
        for action in split_actions(state.action):
            text = describe(action, state.text)
            if state.action_error:
                text += f"  !! {error_gist(state.action_error, 160)}"
            where = short_url(state.url)
            if where != last_url:
                text = f"@ {where}  {text}"
                last_url = where
            if out and out[-1][1].endswith(text) and not text.startswith("@"):
                continue
            out.append((state.index, text))
    return out


def procedure_note(trajectory: Trajectory) -> str:
    """The condensed action path with the controls used, and how the run ended."""
    head = [
        f"procedure note ({outcome_word(trajectory)}, outcome: {trajectory.outcome or 'unknown'})",
        f"goal: {trajectory.goal}",
    ]
    steps = [
        f"  s{idx}: {text}"
        for idx, text in step_lines(trajectory)
        if action_name(text.split("  ")[-1]) not in NAVIGATION_NOISE
    ]
    final = _final_message(trajectory)
    tail = [f"final answer/message: {final}"] if final else []
    return "\n".join(head + ["steps:"] + steps + tail)


def hints_note(trajectory: Trajectory) -> str | None:
    """Errors, retries, dead ends and (for a failed run) how it ended; None when the run shows none of these."""
    lines = []
    for state in trajectory.states:
        if state.action_error:
            what = "; ".join(describe(a, state.text) for a in split_actions(state.action)) or "an empty action"
            lines.append(f"- s{state.index} error on {what}: {error_gist(state.action_error)}")
    lines += _retries(trajectory)
    lines += _dead_ends(trajectory)
    if trajectory.succeeded is False:
        lines += _why_failed(trajectory)
    if not lines:
        return None
    head = [
        f"hints note ({outcome_word(trajectory)}, outcome: {trajectory.outcome or 'unknown'})",
        f"goal: {trajectory.goal}",
    ]
    return "\n".join(head + lines)


def _retries(trajectory: Trajectory) -> list[str]:
    out: list[str] = []
    run: list[tuple[int, str]] = []
    for state in trajectory.states:
        key = (state.action or "").strip()
        if run and key and key == run[-1][1]:
            run.append((state.index, key))
            continue
        if len(run) >= 2:
            out.append(
                f"- retried the same action {len(run)} times (s{run[0][0]}-s{run[-1][0]}): "
                f"{describe(run[0][1], trajectory.states[run[0][0]].text)}"
            )
        run = [(state.index, key)] if key else []
    if len(run) >= 2:
        out.append(f"- retried the same action {len(run)} times (s{run[0][0]}-s{run[-1][0]})")
    return out


def _dead_ends(trajectory: Trajectory) -> list[str]:
    """Returning to a page seen earlier after visiting others: the detour did not lead anywhere."""
    out: list[str] = []
    seen: dict[str, int] = {}
    previous: str | None = None
    for state in trajectory.states:
        where = short_url(state.url)
        left, previous = previous, where
        if where in seen and left != where:
            out.append(
                f"- back at {where} in s{state.index} (first seen s{seen[where]}): the pages in between were a detour"
            )
        seen.setdefault(where, state.index)
    for state in trajectory.states:
        if any(action_name(a) == "go_back" for a in split_actions(state.action)):
            out.append(f"- s{state.index} went back from {short_url(state.url)}")
    return out[:6]


def _why_failed(trajectory: Trajectory) -> list[str]:
    last = trajectory.states[-1]
    out = [f"- the run failed; its last page was '{last.title}' ({short_url(last.url)})"]
    final = _final_message(trajectory)
    if final:
        out.append(f"- the agent's final answer/message was: {final}")
    names = [action_name(a) for s in trajectory.states for a in split_actions(s.action)]
    if not any(n in FINAL_ACTIONS for n in names):
        out.append("- it never sent a final answer (cut off or crashed)")
    errors = [s for s in trajectory.states if s.action_error]
    if errors:
        out.append(f"- last error at s{errors[-1].index}: {error_gist(errors[-1].action_error, 160)}")
    if last.thought:
        out.append(f"- last thought: {last.thought[:300]}")
    return out


def _final_message(trajectory: Trajectory) -> str:
    for state in reversed(trajectory.states):
        for action in reversed(split_actions(state.action)):
            if action_name(action) in FINAL_ACTIONS:
                value = typed_value(action) or action
                return value if len(value) <= 400 else value[:397] + "..."
    return ""
