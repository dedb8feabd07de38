"""Per-trajectory notes, written deterministically from the states: a procedure note and a hints note."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from ..core.actions import MESSAGE_ACTIONS, action_name, describe, element_id, error_gist, split_actions, typed_value
from ..core.messages import OpenDialog
from ..core.text import shorten
from ..trajectory.model import Trajectory

FINAL_ACTIONS = MESSAGE_ACTIONS | {"done", "stop"}
REPLY_CHARS = 160
REPLIES_SHOWN = 8
"""What the pages said back: shown at most this many times in a hints note, each shortened to about
REPLY_CHARS (`core.text.shorten`: its first sentences, or the head and the tail that says what happened)."""
STEP_REPLY_CHARS = 100
"""A procedure step shows the first thing the page said back, shortened to about this length (`core.text.shorten`):
the note lists many steps, and a long reply in each pushed later steps into the part of the note a budget elides."""
NAVIGATION_NOISE = {"scroll", "noop", "wait", "take_note", "calculate", "find_elements", "search_page"}
RECOVERY_STEPS = 3
"""How many steps after a failed action a hints note looks for the step that got the same control to work."""
_QUOTED = re.compile(r"'([^']+)'")


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


def step_lines(
    trajectory: Trajectory, said: list[list[str]] | None = None, described: list[list[str]] | None = None
) -> list[tuple[int, str]]:
    """(state index, readable action) for every action taken, repeats folded into one line with a count; `said[i]`:
    the messages of state i's page, so a step shows what the page answered ('→ page: You saved the product.');
    `described[i]`: state i's actions already described (core.actions.describe), as the pool documents have them."""
    out: list[tuple[int, str]] = []
    last_url = None
    states = trajectory.states
    for state in states:
        actions = _described(trajectory, state.index, described)
        for n, text in enumerate(actions):
            if state.action_error:
                text += f"  !! {error_gist(state.action_error, 160)}"
            reply = said[state.index + 1] if said and n == len(actions) - 1 and state.index + 1 < len(states) else []
            if reply:
                text += "  → page: " + shorten(reply[0], STEP_REPLY_CHARS)
            where = short_url(state.url)
            if where != last_url:
                text = f"@ {where}  {text}"
                last_url = where
            if out and out[-1][1].endswith(text) and not text.startswith("@"):
                continue
            out.append((state.index, text))
    return out


def _described(trajectory: Trajectory, index: int, described: list[list[str]] | None) -> list[str]:
    """State `index`'s actions described (core.actions.describe), taken from `described` when the caller has them."""
    if described is not None:
        return described[index]
    state = trajectory.states[index]
    return [describe(action, state.text) for action in split_actions(state.action)]


def procedure_note(
    trajectory: Trajectory, said: list[list[str]] | None = None, described: list[list[str]] | None = None
) -> str:
    """The condensed action path with the controls used (and what the page answered), and how the run ended."""
    head = [
        f"procedure note ({outcome_word(trajectory)}, outcome: {trajectory.outcome or 'unknown'})",
        f"goal: {trajectory.goal}",
    ]
    steps = [
        f"  s{idx}: {text}"
        for idx, text in step_lines(trajectory, said, described)
        if action_name(text.split("  ")[-1]) not in NAVIGATION_NOISE  # a step with an error or a reply stays
    ]
    final = _final_message(trajectory)
    tail = [f"final answer/message: {final}"] if final else []
    return "\n".join(head + ["steps:"] + steps + tail)


def hints_note(
    trajectory: Trajectory,
    said: list[list[str]] | None = None,
    dialogs: list[OpenDialog] | None = None,
    described: list[list[str]] | None = None,
) -> str | None:
    """Errors, what the pages said back, dialogs left unanswered, retries, dead ends and (for a failed run) how it
    ended; None when the run shows none of these. `described`: as for step_lines."""
    errors = []
    for state in trajectory.states:
        if state.action_error:
            what = "; ".join(_described(trajectory, state.index, described)) or "an empty action"
            errors.append((f"- s{state.index} error on {what}: {error_gist(state.action_error)}",
                           _what_worked(trajectory, state.index, what, described)))  # fmt: skip
    lines = []
    for n, (line, worked) in enumerate(errors):
        lines.append(line)
        if worked and (n + 1 == len(errors) or errors[n + 1][1] != worked):  # said once, after its last failure
            lines.append(f"  then s{worked[0]}: {worked[1]}, with no error")
    lines += _replies(trajectory, said or [], described)
    for dialog in dialogs or []:
        nxt = "; ".join(_described(trajectory, dialog.index, described)) or "no action"
        lines.append(
            f"- s{dialog.index}: a dialog asked '{dialog.text}' ({' / '.join(dialog.buttons)}); the next step, "
            f"{nxt[:120]}, was outside it: the dialog was left unanswered"
        )
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


def _what_worked(
    trajectory: Trajectory, failed: int, what: str, described: list[list[str]] | None
) -> tuple[int, str] | None:
    """(index, action) of the first step within RECOVERY_STEPS after the failed step `failed` that acted on the same
    control (its name holds the failed one's, or the other way round: 'Rating 3 stars', LabelText '3 stars') in
    another way and raised no error: how the agent got past the error ('press' with 'Space' where 'click' timed
    out, 'select_option' where a click on the combobox did)."""
    named = _QUOTED.search(what)
    if named is None:
        return None
    target = named.group(1).strip().lower()
    states = trajectory.states
    for state in states[failed + 1 : failed + 1 + RECOVERY_STEPS]:
        if state.action_error:
            continue
        for action, done in zip(split_actions(state.action), _described(trajectory, state.index, described)):
            if element_id(action) is None:  # a goto's URL or a message names no control
                continue
            name = _QUOTED.search(done)
            other = name.group(1).strip().lower() if name else ""
            if other and (other in target or target in other) and done != what:
                return state.index, done
    return None


def _replies(trajectory: Trajectory, said: list[list[str]], described: list[list[str]] | None) -> list[str]:
    """What the pages said back to the run's actions (an alert, a validation line, 'You saved the rule.'), each
    with the step it answered."""
    out = []
    for state in trajectory.states[1:]:
        reply = said[state.index] if state.index < len(said) else []
        before = trajectory.states[state.index - 1]
        if reply and before.action:
            what = "; ".join(_described(trajectory, before.index, described))
            out.append(
                f"- after s{before.index} {what[:160]}, the page said: "
                + " | ".join(shorten(m, REPLY_CHARS) for m in reply[:2])
            )
    return out[:REPLIES_SHOWN]


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
