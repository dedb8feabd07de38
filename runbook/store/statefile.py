"""One state as a grep-friendly text file: a header of single-line fields, a `---` line, then the page text."""
from __future__ import annotations

from ..trajectory.model import State, Trajectory

HEADER_END = "---"
NEWLINE_MARK = " ⏎ "
HEADER_FIELDS = ("trajectory", "state", "time", "url", "title", "action", "error", "thought", "screenshot")


def _one_line(value: str | None) -> str:
    if not value:
        return ""
    return value.replace("\r\n", "\n").replace("\n", NEWLINE_MARK)


def render_state(trajectory: Trajectory, state: State, screenshot_rel: str | None) -> str:
    """The state file: every header field on one line so that a grep hit shows it whole."""
    header = {
        "trajectory": trajectory.id,
        "state": f"{state.index} of {len(trajectory.states)}",
        "time": state.timestamp or "",
        "url": state.url,
        "title": state.title,
        "action": _one_line(state.action),
        "error": _one_line(state.action_error),
        "thought": _one_line(state.thought),
        "screenshot": screenshot_rel or "",
    }
    lines = [f"{key}: {header[key]}" for key in HEADER_FIELDS]
    return "\n".join(lines) + f"\n{HEADER_END}\n" + state.text + ("\n" if not state.text.endswith("\n") else "")


def parse_state(text: str) -> tuple[dict[str, str], str]:
    """(header fields, page text) of a state file."""
    head, sep, body = text.partition(f"\n{HEADER_END}\n")
    if not sep:
        return {}, text
    fields = {}
    for line in head.splitlines():
        key, _, value = line.partition(": ")
        fields[key.strip()] = value.replace(NEWLINE_MARK, "\n")
    return fields, body
