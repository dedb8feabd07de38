"""LongMemEval-V2's `content` + `metadata` trajectory form (the `states` form is read by jsonl.py).

The form, as the benchmark's own insert code reads it (memory_modules/trajectory_store.py,
`prepare_trajectory_insert`, in xiaowu0162/LongMemEval-V2):

    {"id": "...", "outcome": "..." | null,
     "metadata": {"original_goal": "..." | ["...", ...], "domain"?: "...", "environment"?: "..."},
     "content": [{"url": "...", "action": "..." | null, "thoughts": "..." | null, "step"?: int,
                  "observation": {"text": "<accessibility tree>", "screenshot": "<path>"}}]}

The goal is metadata.original_goal (a list is joined with spaces), the start URL is the first item's url, and
a relative screenshot is looked up beside the file, then under its screenshots/ folder.
"""

from __future__ import annotations

import os
from typing import Any

from ...errors import InputError
from ..model import State, Trajectory, check_id, check_nesting, unknown_fields
from ..screenshots import locate, names_no_screenshot
from ..times import check_time_order, check_timestamp

_TOP_KNOWN = {"id", "domain", "site", "goal", "start_url", "outcome", "source", "content", "metadata", "environment"}
_ITEM_KNOWN = ("url", "title", "action", "thoughts", "thought", "step", "timestamp", "observation")
_OBSERVATION_KNOWN = ("text", "screenshot")


def is_content_form(obj: Any) -> bool:
    """True for an object that carries its states as `content` (with `metadata`) instead of `states`."""
    return isinstance(obj, dict) and "states" not in obj and "content" in obj


def from_content_form(
    obj: dict,
    *,
    path: str | None = None,
    line: int | None = None,
    base_dir: str | None = None,
    screenshot_root: str | None = None,
    lenient: bool = False,
) -> Trajectory:
    """Validate one content-form trajectory; raises InputError naming the file, trajectory and field.

    Screenshots must lie in `base_dir` (default: the working folder), or in `screenshot_root` when given. A field
    runbook does not know is an error unless `lenient` (as LongMemEval-V2's harness loader reads: kept or
    ignored)."""
    where: dict[str, Any] = {"path": path, "line": line}
    tid = obj.get("id")
    if not isinstance(tid, str) or not tid.strip():
        raise InputError("is missing or not a non-empty string", field="id", **where)
    where["trajectory_id"] = check_id(tid, **where)
    if not lenient:
        unknown_fields(obj, _TOP_KNOWN, where=where)
    for name in ("source", "metadata"):
        if name in obj:
            check_nesting(obj[name], field=name, where=where)
    content, metadata = obj.get("content"), obj.get("metadata")
    if not isinstance(content, list) or not content:
        raise InputError("must be a non-empty list of states", field="content", **where)
    if not isinstance(metadata, dict):
        raise InputError("must be an object (it carries the goal as original_goal)", field="metadata", **where)
    folders = (base_dir or os.getcwd(), screenshot_root)
    states = [_state(item, pos, where=where, folders=folders, lenient=lenient) for pos, item in enumerate(content)]
    check_time_order([s.timestamp for s in states], field="content[{}].timestamp", where=where)
    return Trajectory(
        id=tid,
        states=states,
        goal=_goal(metadata.get("original_goal"), obj.get("goal")),
        site=_first_str(obj.get("site"), obj.get("environment"), metadata.get("environment"), metadata.get("site")),
        domain=_first_str(obj.get("domain"), metadata.get("domain")) or "web",
        start_url=_first_str(obj.get("start_url")) or states[0].url,
        outcome=_outcome(obj.get("outcome"), where),
        source=_source(obj.get("source"), where),
        extra={k: v for k, v in obj.items() if k not in _TOP_KNOWN} | {"metadata": metadata},
    )


def _state(item: Any, pos: int, *, where: dict, folders: tuple[str, str | None], lenient: bool) -> State:
    name = f"content[{pos}]"
    if not isinstance(item, dict):
        raise InputError(f"must be an object, got {type(item).__name__}", field=name, **where)
    if not lenient:
        unknown_fields(item, _ITEM_KNOWN, field=f"{name}.", where=where)
    url = item.get("url")
    if not isinstance(url, str) or not url.strip():
        raise InputError("is missing or empty", field=f"{name}.url", **where)
    observation = item.get("observation")
    if not isinstance(observation, dict):
        raise InputError("must be an object with text and screenshot", field=f"{name}.observation", **where)
    if not lenient:
        unknown_fields(observation, _OBSERVATION_KNOWN, field=f"{name}.observation.", where=where)
    text = observation.get("text")
    if not isinstance(text, str):
        raise InputError("must be a string", field=f"{name}.observation.text", **where)
    return State(
        index=pos,
        url=url,
        title=_optional_str(item.get("title"), f"{name}.title", where) or "",
        text=text,
        action=_optional_str(item.get("action"), f"{name}.action", where),
        thought=_optional_str(item.get("thoughts", item.get("thought")), f"{name}.thoughts", where),
        timestamp=check_timestamp(item.get("timestamp"), field=f"{name}.timestamp", where=where),
        screenshot=_screenshot(observation.get("screenshot"), f"{name}.observation.screenshot", where, folders),
    )


def _screenshot(value: Any, name: str, where: dict, folders: tuple[str, str | None]) -> str | None:
    value = _optional_str(value, name, where)
    if not value or names_no_screenshot(value):
        return None
    source_folder, screenshot_root = folders
    # the benchmark's data root keeps images in screenshots/, and paths are written either with or without it
    return locate(
        value, source_folder, screenshot_root=screenshot_root, field=name, where=where, also_under=("screenshots",)
    )


def _optional_str(value: Any, name: str, where: dict) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise InputError(f"must be a string or null, got {type(value).__name__}", field=name, **where)


def _goal(original: Any, fallback: Any) -> str:
    if isinstance(original, list):
        original = " ".join(p.strip() for p in original if isinstance(p, str) and p.strip())
    return _first_str(original, fallback)


def _first_str(*values: Any) -> str:
    return next((v.strip() for v in values if isinstance(v, str) and v.strip()), "")


def _source(value: Any, where: dict) -> dict | None:
    if value is None or isinstance(value, dict):
        return value
    raise InputError(f"must be an object, got {type(value).__name__}", field="source", **where)


def _outcome(value: Any, where: dict) -> str | None:
    if isinstance(value, bool):
        return "success" if value else "failure"
    return _optional_str(value, "outcome", where)
