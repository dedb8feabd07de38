"""One state as a grep-friendly text file: a header of single-line fields, a `---` line, then the page text."""
from __future__ import annotations

from ..trajectory.model import State, Trajectory

HEADER_END = "---"
NEWLINE_MARK = " ⏎ "
HEADER_FIELDS = ("trajectory", "state", "time", "url", "title", "action", "error", "thought", "screenshot")
LINE_BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"
"""Every character some reader of a state file ends a line at: ripgrep (\\n), Python's text files (\\r too) and
str.splitlines (all of them), which the host and the sandbox programs (tools/rbk.py, show) parse headers with."""
_TO_MARK = {ord(ch): NEWLINE_MARK for ch in LINE_BREAKS}


def _one_line(value: str | None) -> str:
    """`value` on one line for every parser: each line break (\\r\\n counts as one) becomes NEWLINE_MARK."""
    if not value:
        return ""
    return value.replace("\r\n", "\n").translate(_TO_MARK)


def render_state(trajectory: Trajectory, state: State, screenshot_rel: str | None) -> str:
    """The state file: every header field on one line so that a grep hit shows it whole."""
    header = {
        "trajectory": trajectory.id,
        "state": f"{state.index} of {len(trajectory.states)}",
        "time": state.timestamp,
        "url": state.url,
        "title": state.title,
        "action": state.action,
        "error": state.action_error,
        "thought": state.thought,
        "screenshot": screenshot_rel,
    }
    lines = [f"{key}: {_one_line(header[key])}" for key in HEADER_FIELDS]
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
