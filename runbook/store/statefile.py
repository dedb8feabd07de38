"""Writing a state file from a trajectory's state; the format itself (header fields, `---`, page text) and its
parser are defined once in runbook.core.statefile, which the sandbox programs share."""

from __future__ import annotations

from ..core import statefile as _format
from ..core.statefile import HEADER_END, HEADER_FIELDS, LINE_BREAKS, NEWLINE_MARK  # noqa: F401
from ..trajectory.model import State, Trajectory


def render_state(trajectory: Trajectory, state: State, screenshot_rel: str | None) -> str:
    """The state file: every header field on one line so that a grep hit shows it whole."""
    return "".join(state_file_parts(trajectory, state, screenshot_rel))


def state_file_parts(trajectory: Trajectory, state: State, screenshot_rel: str | None) -> tuple[str, str]:
    """(header, page) of the state file, which is their concatenation."""
    header = {
        "trajectory": trajectory.id,
        "state": f"{state.index} of {len(trajectory.states)}",
        "time": state.timestamp or _format.UNKNOWN_TIME,  # never a blank line: says none was recorded
        "url": state.url,
        "title": state.title,
        "action": state.action,
        "error": state.action_error,
        "thought": state.thought,
        "screenshot": screenshot_rel,
    }
    return _format.render_header(header), state.text + ("\n" if not state.text.endswith("\n") else "")


def parse_state(text: str) -> tuple[dict[str, str], str]:
    """(header fields, page text) of a state file."""
    fields, body, _ = _format.parse_state(text)
    return fields, body
