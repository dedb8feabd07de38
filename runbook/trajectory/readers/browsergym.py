"""BrowserGym / AgentLab result folders: one episode per folder, one step file per observed page.

A folder holds `steps_info_<N>.json` files (AgentLab's StepInfo saved as JSON) or AgentLab's own
`step_<N>.pkl.gz` pickles, plus `summary_info.json` and optional `screenshot_step_<N>.png` files.
Step N is state N: the page BrowserGym returned, and the action the agent chose on it.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson

from ...errors import InputError
from ..limits import DEFAULT_LIMITS, ReadLimits, check_file_size
from ..model import State, Trajectory, check_id
from ..screenshots import allowed_root, confine
from ..times import check_time_order
from .safe_pickle import FolderUnreadable, fields_of, load_pickle

NAME = "browsergym"
_STEP_JSON = re.compile(r"^steps_info_(\d+)\.json$")
_STEP_PKL = re.compile(r"^step_(\d+)\.pkl\.gz$")
_THINK = re.compile(r"<think>(.*?)</think>", re.S)
_ACTION = re.compile(r"<action>(.*?)</action>", re.S)
_FENCE = re.compile(r"^```(?:[\w+-]+\n)?\s*(.*?)\s*```$", re.S)
WEBARENA_PORTS = {
    7770: "shopping",
    7780: "shopping_admin",
    9999: "reddit",
    8023: "gitlab",
    3000: "map",
    8888: "wikipedia",
}
"""The ports of WebArena's standard deployment, which name the site a URL belongs to."""


def detect(path: Path) -> bool:
    """True for a folder holding summary_info.json, steps_info_<N>.json or step_<N>.pkl.gz."""
    if not path.is_dir():
        return False
    if (path / "summary_info.json").is_file():
        return True
    try:
        with os.scandir(path) as entries:
            return any(_STEP_JSON.match(e.name) or _STEP_PKL.match(e.name) for e in entries)
    except OSError:
        return False


def read(
    path: Path, *, screenshot_root: str | None = None, limits: ReadLimits = DEFAULT_LIMITS
) -> Iterator[Trajectory | InputError]:
    """Yield the folder's one episode, or an InputError naming the step file and field at fault.

    Screenshots must lie in the folder, or in `screenshot_root` when given; each step file's (decompressed) size
    is bounded by `limits`."""
    folder = Path(path)
    numbered = _step_files(folder)
    try:
        yield _trajectory(folder, numbered, allowed_root(str(folder), screenshot_root), limits)
    except FolderUnreadable:
        raise
    except InputError as exc:
        yield exc


def _step_files(folder: Path) -> dict[int, Path]:
    if not folder.is_dir():
        raise InputError("is not a folder (a BrowserGym/AgentLab result folder was expected)", path=str(folder))
    found: dict[re.Pattern, dict[int, Path]] = {_STEP_JSON: {}, _STEP_PKL: {}}
    try:
        names = os.listdir(folder)
    except OSError as exc:
        raise InputError(f"cannot list: {exc}", path=str(folder)) from exc
    for name in names:
        for pattern, numbered in found.items():
            match = pattern.match(name)
            if match:
                numbered[int(match.group(1))] = folder / name
    # JSON is preferred when both exist: it needs no unpickling
    numbered = found[_STEP_JSON] or found[_STEP_PKL]
    if not numbered:
        raise InputError(
            "has no steps_info_<N>.json or step_<N>.pkl.gz files (did the episode crash at reset?)", path=str(folder)
        )
    return numbered


def _trajectory(folder: Path, numbered: dict[int, Path], shots_root: str, limits: ReadLimits) -> Trajectory:
    tid = check_id(folder.name, note=" (the id is the folder name)", path=str(folder))
    missing = next((n for n in range(len(numbered)) if n not in numbered), None)
    if missing is not None:
        raise InputError(
            f"step {missing} is missing: step files must be numbered 0, 1, 2, ...", path=str(folder), trajectory_id=tid
        )
    files = [numbered[n] for n in range(len(numbered))]
    records = [_load_step(f, tid, limits) for f in files]
    summary = _load_summary(folder, tid, limits)
    states = []
    for n, (file, record) in enumerate(zip(files, records)):
        following = records[n + 1] if n + 1 < len(records) else None
        states.append(_state(n, record, following, file=file, tid=tid, shots_root=shots_root))
    where = {"path": str(folder), "trajectory_id": tid}
    check_time_order([s.timestamp for s in states], field=lambda n: f"{files[n].name}: profiling.env_stop", where=where)
    start_url = states[0].url
    return Trajectory(
        id=tid,
        states=states,
        goal=_goal(_obs(records[0], files[0], tid)),
        site=site_from_url(start_url),
        start_url=start_url,
        outcome=reward_outcome(summary.get("cum_reward")),
        source={"format": NAME, "path": str(folder)},
    )


def _state(n: int, record: dict, following: dict | None, *, file: Path, tid: str, shots_root: str) -> State:
    obs = _obs(record, file, tid)
    url, title = _active_page(obs, file, tid)
    text = obs.get("axtree_txt", obs.get("dom_txt")) or ""
    if not isinstance(text, str):
        raise InputError("must be a string", path=str(file), trajectory_id=tid, field="obs.axtree_txt")
    thought, action = split_action(record.get("action"), fields_of(record.get("agent_info")).get("think"))
    # BrowserGym reports an action's error in the observation that follows it
    error = fields_of(following.get("obs")).get("last_action_error") if following is not None else ""
    return State(
        index=n,
        url=url,
        title=title,
        text=text,
        action=action,
        thought=thought,
        action_error=str(error or ""),
        timestamp=iso_utc(fields_of(record.get("profiling")).get("env_stop")),
        screenshot=_screenshot(file.parent, n, tid, shots_root),
    )


def _obs(record: dict, file: Path, tid: str) -> dict:
    obs = fields_of(record.get("obs"))
    if not obs:
        raise InputError("is missing or empty", path=str(file), trajectory_id=tid, field="obs")
    return obs


def _active_page(obs: dict, file: Path, tid: str) -> tuple[str, str]:
    urls, titles = _as_list(obs.get("open_pages_urls")), _as_list(obs.get("open_pages_titles"))
    if not urls:
        if isinstance(obs.get("url"), str):
            return obs["url"], str(obs.get("title") or "")
        raise InputError("is missing or empty", path=str(file), trajectory_id=tid, field="obs.open_pages_urls")
    active = min(max(_first_int(obs.get("active_page_index")), 0), len(urls) - 1)
    title = titles[active] if active < len(titles) else ""
    return str(urls[active]), str(title or "")


def _as_list(value: Any) -> list:
    if hasattr(value, "tolist"):  # a numpy array, from an AgentLab pickle
        value = value.tolist()
    return list(value) if isinstance(value, (list, tuple)) else []


def _first_int(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    first = (_as_list(value) or [0])[0]
    return first if isinstance(first, int) and not isinstance(first, bool) else 0


def _goal(obs: dict) -> str:
    goal = obs.get("goal")
    if isinstance(goal, str) and goal.strip():
        return goal
    parts = obs.get("goal_object") or []
    texts = [p.get("text") for p in parts if isinstance(p, dict) and p.get("type") == "text"]
    return "\n".join(t for t in texts if isinstance(t, str))


def _screenshot(folder: Path, n: int, tid: str, shots_root: str) -> str | None:
    for suffix in (".png", ".jpg", ".jpeg"):
        candidate = folder / f"screenshot_step_{n}{suffix}"
        if os.path.lexists(candidate):
            return confine(
                str(candidate),
                shots_root,
                field=f"states[{n}].screenshot",
                where={"path": str(candidate), "trajectory_id": tid},
            )
    return None


def split_action(raw: Any, think: Any = None) -> tuple[str | None, str | None]:
    """(thought, action code) from `<think>T</think><action>```code```</action>`, or from a bare action."""
    thought = think.strip() if isinstance(think, str) else None
    if raw is None:
        return thought or None, None
    raw = str(raw)
    think_match, action_match = _THINK.search(raw), _ACTION.search(raw)
    if think_match:
        thought = think_match.group(1).strip()
    code = action_match.group(1) if action_match else _THINK.sub("", raw)
    code = code.strip()
    fenced = _FENCE.match(code)
    return thought or None, fenced.group(1).strip() if fenced else code


def iso_utc(seconds: Any) -> str | None:
    """A unix time as ISO-8601 UTC with milliseconds and a Z, or None when absent."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds <= 0:
        return None
    try:
        stamp = datetime.fromtimestamp(seconds, tz=UTC).isoformat(timespec="milliseconds")
    except (OverflowError, OSError, ValueError):
        return None
    return stamp.replace("+00:00", "Z")


def reward_outcome(reward: Any) -> str | None:
    """'success (reward 1.0)' when the reward is at least 1, else 'failure (reward r)'; None when unknown."""
    if isinstance(reward, bool):
        reward = float(reward)
    if not isinstance(reward, (int, float)):
        return None
    reward = float(reward)
    return f"{'success' if reward >= 1.0 else 'failure'} (reward {reward})"


def site_from_url(url: str) -> str:
    """The WebArena site a URL belongs to (by port), else its host name; '' for localhost or an IP."""
    parts = urlsplit(url or "")
    host = parts.hostname or ""
    if host.endswith("openstreetmap.org"):
        return "map"
    try:
        port = parts.port
    except ValueError:
        port = None
    if port in WEBARENA_PORTS:
        return WEBARENA_PORTS[port]
    return "" if host in ("", "localhost") or _is_ip(host) else host


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _load_step(file: Path, tid: str, limits: ReadLimits) -> dict:
    if file.name.endswith(".pkl.gz"):
        return fields_of(load_pickle(file, limits))
    record = load_json(file, tid, limits)
    if not isinstance(record, dict):
        raise InputError(f"must hold a JSON object, got {type(record).__name__}", path=str(file), trajectory_id=tid)
    return record


def _load_summary(folder: Path, tid: str, limits: ReadLimits) -> dict:
    file = folder / "summary_info.json"
    # AgentLab leaves an empty summary when an episode is still running or was killed
    if not file.is_file() or file.stat().st_size == 0:
        return {}
    summary = load_json(file, tid, limits)
    return summary if isinstance(summary, dict) else {}


def load_json(file: Path, tid: str | None = None, limits: ReadLimits = DEFAULT_LIMITS) -> Any:
    """A JSON file's content; InputError naming the file when it cannot be read or parsed, or is larger than one
    record may be."""
    try:
        check_file_size(file, limits)
        data = file.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read: {exc}", path=str(file), trajectory_id=tid) from exc
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    try:
        # Python's json.dump writes NaN/Infinity, which orjson rejects
        return json.loads(data)
    except ValueError as exc:
        raise InputError(f"malformed JSON: {exc}", path=str(file), trajectory_id=tid) from exc
