"""One streamed step, in the shape an agent framework emits it, as the fields of a runbook state.

Three shapes are read:

- runbook's own state fields (`url`, `title`, `accessibility_tree`, `action`, `action_error`, `thought`,
  `timestamp`, `screenshot`), and the names BrowserGym and AgentLab give the same things: `axtree_txt` or
  `dom_txt` (the page), `think` (the thought), `last_action_error` (the error of the PREVIOUS step's action, as
  BrowserGym reports it in the next observation: it is stored on the previous state);
- an AgentLab step record `{"obs": {...}, "action", "agent_info": {"think"}, "profiling": {"env_stop"}}`;
- a browser-use history entry `{"model_output": {"thinking", "action": [...]}, "result": [{"error"}],
  "state": {"url", "title", "screenshot_path"}, "metadata": {"step_start_time"}, "state_message"}`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import InputError

STATE_FIELDS = ("url", "title", "accessibility_tree", "action", "action_error", "thought", "timestamp", "screenshot")
"""A stored state's fields, as a streamed step names them."""
ALIASES = {
    "text": "accessibility_tree",
    "page_text": "accessibility_tree",
    "axtree_txt": "accessibility_tree",
    "dom_txt": "accessibility_tree",
    "thoughts": "thought",
    "think": "thought",
    "screenshot_path": "screenshot",
}
"""Other names for the same fields: LongMemEval-V2's, BrowserGym's observation keys, AgentLab's and browser-use's."""
PREVIOUS_ERROR = "last_action_error"
"""BrowserGym's name for the error of the action taken on the previous page."""
ACCEPTED = (*STATE_FIELDS, *ALIASES, PREVIOUS_ERROR, "state_index")


@dataclass
class Step:
    """A step read from any shape: the state's fields, and an error that belongs to the previous state."""

    fields: dict[str, Any]
    previous_error: str | None = None


def read_step(raw: Any) -> Step:
    """The step in runbook's field names; InputError naming the field for an unknown one or a wrong shape."""
    if not isinstance(raw, dict):
        raise InputError(f"must be a JSON object, got {type(raw).__name__}", field="state")
    if isinstance(raw.get("obs"), dict):
        return _agentlab(raw)
    if isinstance(raw.get("model_output"), dict) or "state_message" in raw or isinstance(raw.get("state"), dict):
        return _browser_use(raw)
    return _flat(raw)


def _flat(raw: dict[str, Any]) -> Step:
    unknown = sorted(k for k in raw if k not in ACCEPTED)
    if unknown:
        raise InputError(
            f"unknown field(s) {', '.join(unknown)}; a step has {', '.join(STATE_FIELDS)} (also named "
            f"{', '.join(ALIASES)}, and BrowserGym's {PREVIOUS_ERROR}), or is an AgentLab step record "
            f'{{"obs", "action", ...}} or a browser-use history entry {{"model_output", "state", ...}}',
            field=f"state.{unknown[0]}",
        )
    fields: dict[str, Any] = {}
    for key, value in raw.items():
        name = ALIASES.get(key, key)
        if key == PREVIOUS_ERROR or value is None:
            continue
        if name in fields:
            raise InputError(f"is given twice (as {name!r} and as {key!r})", field=f"state.{key}")
        fields[name] = value
    error = raw.get(PREVIOUS_ERROR)
    return Step(fields, previous_error=error if isinstance(error, str) and error else None)


def _agentlab(raw: dict[str, Any]) -> Step:
    from .readers.browsergym import iso_utc, split_action

    obs = raw["obs"]  # of a BrowserGym observation's keys, the page, its url and title and the previous error
    agent_info = _dict(raw.get("agent_info"))
    profiling = _dict(raw.get("profiling"))
    thought, action = split_action(raw.get("action"), agent_info.get("think"))
    urls, titles = obs.get("open_pages_urls") or [], obs.get("open_pages_titles") or []
    active = obs.get("active_page_index", 0)
    active = active[0] if isinstance(active, list) and active else active
    active = active if isinstance(active, int) and 0 <= active < len(urls) else 0
    fields = {
        "url": obs.get("url") or (urls[active] if urls else None),
        "title": titles[active] if active < len(titles) else None,
        "accessibility_tree": obs.get("axtree_txt", obs.get("dom_txt")),
        "action": action,
        "thought": thought,
        "timestamp": iso_utc(profiling.get("env_stop")),
    }
    error = obs.get(PREVIOUS_ERROR)
    return Step(
        {k: v for k, v in fields.items() if v is not None},
        previous_error=error if isinstance(error, str) and error else None,
    )


def _browser_use(raw: dict[str, Any]) -> Step:
    from .readers.browser_use import entry_fields

    return Step(entry_fields(raw))


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
