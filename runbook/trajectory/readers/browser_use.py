"""browser-use history folders: `history.json` (browser-use's AgentHistoryList), optional `result.json`
(the harness's verdict: instruction, passed) and `screenshots/step_<i>.png`.

Each history entry is {model_output: {thinking, action: [{name: params}]}, result: [{error, ...}],
state: {url, title, screenshot_path, ...}, metadata: {step_start_time, step_number, ...}, state_message}.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ...errors import InputError
from ..limits import DEFAULT_LIMITS, ReadLimits
from ..model import State, Trajectory, check_id
from ..screenshots import allowed_root, confine, locate
from ..times import check_time_order
from .browsergym import iso_utc, load_json, reward_outcome, site_from_url

NAME = "browser_use"
_BROWSER_STATE = re.compile(r"<browser_state>\n?(.*?)</browser_state>", re.S)
_USER_REQUEST = re.compile(r"<user_request>\s*(.*?)\s*</user_request>", re.S)
_INITIAL_TITLE = "Initial Actions"
"""The title browser-use gives the synthetic step 0 that only runs the initial navigation."""


def detect(path: Path) -> bool:
    """True for a folder holding history.json (or that file itself)."""
    if path.is_file():
        return path.name == "history.json"
    return path.is_dir() and (path / "history.json").is_file()


def read(
    path: Path, *, screenshot_root: str | None = None, limits: ReadLimits = DEFAULT_LIMITS
) -> Iterator[Trajectory | InputError]:
    """Yield the folder's one episode, or an InputError naming the history entry and field at fault.

    Screenshots must lie in the folder, or in `screenshot_root` when given; history.json's size is bounded by
    `limits`."""
    folder = Path(path).parent if Path(path).is_file() else Path(path)
    history_file = folder / "history.json"
    if not history_file.is_file():
        raise InputError("has no history.json (a browser-use history folder was expected)", path=str(folder))
    try:
        yield _trajectory(folder, history_file, allowed_root(str(folder), screenshot_root), limits)
    except InputError as exc:
        yield exc


def _trajectory(folder: Path, history_file: Path, shots_root: str, limits: ReadLimits) -> Trajectory:
    tid = check_id(folder.name, note=" (the id is the folder name)", path=str(folder))
    where: dict[str, Any] = {"path": str(history_file), "trajectory_id": tid}
    doc = load_json(history_file, tid, limits)
    entries = doc.get("history") if isinstance(doc, dict) else None
    if not isinstance(entries, list) or not entries:
        raise InputError("is missing or empty", field="history", **where)
    first = 1 if _is_initial_actions(entries[0]) else 0
    states = [_state(pos - first, entries[pos], pos, folder, where, shots_root) for pos in range(first, len(entries))]
    if not states:
        raise InputError("holds only browser-use's synthetic 'Initial Actions' entry", field="history", **where)
    check_time_order(
        [s.timestamp for s in states], field=lambda n: f"history[{n + first}].metadata.step_start_time", where=where
    )
    result = _load_result(folder, tid)
    start_url = _dict(entries[0].get("state")).get("url") if first else states[0].url
    return Trajectory(
        id=tid,
        states=states,
        goal=_goal(result, entries[first]),
        site=site_from_url(start_url or states[0].url),
        start_url=start_url or states[0].url,
        outcome=reward_outcome(float(result["passed"])) if isinstance(result.get("passed"), bool) else None,
        source={"format": NAME, "path": str(folder)},
    )


def _is_initial_actions(entry: Any) -> bool:
    return isinstance(entry, dict) and _dict(entry.get("state")).get("title") == _INITIAL_TITLE


def _state(index: int, entry: Any, pos: int, folder: Path, where: dict, shots_root: str) -> State:
    name = f"history[{pos}]"
    if not isinstance(entry, dict):
        raise InputError(f"must be an object, got {type(entry).__name__}", field=name, **where)
    state = entry.get("state")
    if not isinstance(state, dict):
        raise InputError("is missing or not an object", field=f"{name}.state", **where)
    url = state.get("url")
    if not isinstance(url, str) or not url:
        raise InputError("is missing or empty", field=f"{name}.state.url", **where)
    output = _dict(entry.get("model_output"))
    thought = output.get("thinking")
    return State(
        index=index,
        url=url,
        title=str(state.get("title") or ""),
        text=_browser_state(entry.get("state_message")),
        thought=(thought.strip() or None) if isinstance(thought, str) else None,
        action=render_actions(output.get("action")) or None,
        action_error=_errors(entry.get("result")),
        timestamp=iso_utc(_dict(entry.get("metadata")).get("step_start_time")),
        screenshot=_screenshot(
            folder,
            pos,
            state.get("screenshot_path"),
            where,
            fields=(f"states[{index}].screenshot", f"{name}.state.screenshot_path"),
            shots_root=shots_root,
        ),
    )


def entry_fields(entry: dict[str, Any]) -> dict[str, Any]:
    """A history entry as a streamed step's fields (url, title, accessibility_tree, thought, action, action_error,
    timestamp, screenshot), for an agent that posts its entries while it runs."""
    state, output = _dict(entry.get("state")), _dict(entry.get("model_output"))
    thought = output.get("thinking")
    fields = {
        "url": state.get("url"),
        "title": state.get("title"),
        "accessibility_tree": _browser_state(entry.get("state_message")) or None,
        "thought": (thought.strip() or None) if isinstance(thought, str) else None,
        "action": render_actions(output.get("action")) or None,
        "action_error": _errors(entry.get("result")) or None,
        "timestamp": iso_utc(_dict(entry.get("metadata")).get("step_start_time")),
        "screenshot": state.get("screenshot_path") or None,
    }
    return {k: v for k, v in fields.items() if v is not None}


def render_actions(actions: Any) -> str:
    """browser-use actions as calls, one per line: `input(index=16, text='Jordan R. Rivera', clear=True)`."""
    lines = []
    for item in actions if isinstance(actions, list) else []:
        for name, params in _dict(item).items():
            args = ", ".join(f"{k}={v!r}" for k, v in params.items()) if isinstance(params, dict) else ""
            lines.append(f"{name}({args})")
    return "\n".join(lines)


def _browser_state(message: Any) -> str:
    if not isinstance(message, str):
        return ""
    match = _BROWSER_STATE.search(message)
    return match.group(1).strip() if match else ""


def _errors(results: Any) -> str:
    errors = [r.get("error") for r in results if isinstance(r, dict)] if isinstance(results, list) else []
    return "\n".join(str(e) for e in errors if e)


def _screenshot(
    folder: Path, pos: int, recorded: Any, where: dict, *, fields: tuple[str, str], shots_root: str
) -> str | None:
    saved_field, recorded_field = fields
    # the harness copies history entry i's screenshot to screenshots/step_<i>.png
    for suffix in (".png", ".jpg", ".jpeg"):
        saved = folder / "screenshots" / f"step_{pos}{suffix}"
        if os.path.lexists(saved):
            return confine(str(saved), shots_root, field=saved_field, where=dict(where, path=str(saved)))
    if not isinstance(recorded, str) or not recorded:
        return None
    if "\0" not in recorded and os.path.isabs(recorded) and not os.path.lexists(recorded):
        return None  # browser-use records a temporary folder that is deleted after the run: no error
    return locate(recorded, str(folder), screenshot_root=shots_root, field=recorded_field, where=where)


def _load_result(folder: Path, tid: str) -> dict:
    file = folder / "result.json"
    result = load_json(file, tid) if file.is_file() else {}
    return result if isinstance(result, dict) else {}


def _goal(result: dict, first_entry: Any) -> str:
    instruction = result.get("instruction") or result.get("task")
    if isinstance(instruction, str) and instruction.strip():
        return instruction
    # without a result.json the task survives only in the prompt browser-use recorded
    match = _USER_REQUEST.search(str(_dict(first_entry).get("state_message") or ""))
    return match.group(1) if match else ""


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}
