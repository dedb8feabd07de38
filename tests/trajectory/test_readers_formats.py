"""Readers of BrowserGym/AgentLab folders, browser-use folders and LongMemEval-V2's content form."""

from __future__ import annotations

import ast
import dataclasses
import gzip
import json
import pickle
import sys
import types
from datetime import datetime
from pathlib import Path

import pytest
from PIL import Image

from runbook.errors import InputError
from runbook.trajectory.model import Trajectory
from runbook.trajectory.readers import browser_use, browsergym, content_form, detect_reader, jsonl
from tests.conftest import require_shared

# 1765867656.1043622 is 2025-12-16T06:47:36.104Z, as in the WebArena set's first state
T0 = 1765867656.1043622


def _png(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (4, 3), (200, 30, 30)).save(path)
    return path


def _write_json(path: Path, obj) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj), encoding="utf-8")
    return path


def _only(items: list):
    assert len(items) == 1, items
    return items[0]


# --- BrowserGym / AgentLab ------------------------------------------------------------------------------------


def _step(n: int, *, url: str, action, error: str = "", urls=None, active=0, think=None) -> dict:
    urls = urls or [url]
    return {
        "step": n,
        "obs": {
            "goal": "Find the cheapest shoes",
            "last_action_error": error,
            "open_pages_urls": urls,
            "open_pages_titles": [f"Title {i}" for i in range(len(urls))],
            "active_page_index": [active],
            "axtree_txt": f"RootWebArea 'page {n}'",
            "pruned_html": "<html/>",
        },
        "reward": 0,
        "terminated": False,
        "truncated": False,
        "action": action,
        "agent_info": {"think": think} if think else {},
        "profiling": {"env_start": T0 + 10 * n - 5, "env_stop": T0 + 10 * n},
    }


@pytest.fixture
def gym_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "results" / "task_7"
    steps = [
        _step(
            0,
            url="http://localhost:7770/",
            action="<think>\nI should search.\n</think>\n<action>\n```fill('12', 'shoes')```\n</action>",
        ),
        _step(
            1,
            url="http://localhost:7770/search",
            urls=["http://localhost:7770/", "http://localhost:7770/search"],
            active=1,
            action="<think>Open the first result.</think><action>```python\nclick('5')\n```</action>",
        ),
        _step(
            2,
            url="http://localhost:7770/p/1",
            error="TimeoutError: click('5') timed out",
            action="send_msg_to_user('$12')",
            think="  The price is $12.  ",
        ),
    ]
    for n, step in enumerate(steps):
        _write_json(folder / f"steps_info_{n}.json", step)
    _write_json(folder / "summary_info.json", {"n_steps": 2, "cum_reward": 1.0, "err_msg": None})
    _png(folder / "screenshot_step_1.png")
    return folder


def test_browsergym_folder_maps_every_field(gym_folder: Path):
    assert browsergym.detect(gym_folder)
    assert detect_reader(gym_folder) is browsergym
    traj = _only(list(browsergym.read(gym_folder)))
    assert isinstance(traj, Trajectory)
    assert (traj.id, traj.site, traj.goal) == ("task_7", "shopping", "Find the cheapest shoes")
    assert traj.start_url == "http://localhost:7770/"
    assert traj.outcome == "success (reward 1.0)" and traj.succeeded is True
    s0, s1, s2 = traj.states
    assert (s0.thought, s0.action) == ("I should search.", "fill('12', 'shoes')")
    assert (s1.thought, s1.action) == ("Open the first result.", "click('5')")
    assert (s2.thought, s2.action) == ("The price is $12.", "send_msg_to_user('$12')")
    # the error of state 1's action is reported by the observation of step 2
    assert [s.action_error for s in traj.states] == ["", "TimeoutError: click('5') timed out", ""]
    assert (s1.url, s1.title) == ("http://localhost:7770/search", "Title 1")
    assert s0.text == "RootWebArea 'page 0'"
    assert s0.timestamp == "2025-12-16T06:47:36.104Z"
    assert s1.timestamp == "2025-12-16T06:47:46.104Z"
    assert s1.screenshot == str((gym_folder / "screenshot_step_1.png").resolve())
    assert s0.screenshot is None


def test_browsergym_detect_is_only_for_result_folders(gym_folder: Path, tmp_path: Path):
    assert not browsergym.detect(gym_folder.parent)
    assert not browsergym.detect(gym_folder / "steps_info_0.json")
    (tmp_path / "bu").mkdir()
    (tmp_path / "bu" / "history.json").write_text("{}")
    assert not browsergym.detect(tmp_path / "bu")


def test_browsergym_fractional_reward_and_sites():
    assert browsergym.reward_outcome(0.5) == "failure (reward 0.5)"
    assert browsergym.reward_outcome(1) == "success (reward 1.0)"
    assert browsergym.reward_outcome(None) is None
    assert browsergym.site_from_url("http://localhost:9999/f/books") == "reddit"
    assert browsergym.site_from_url("https://www.openstreetmap.org/#map=7/42") == "map"
    assert browsergym.site_from_url("http://10.0.0.1:8030/") == ""


def test_browsergym_missing_field_names_file_and_field(gym_folder: Path):
    step = json.loads((gym_folder / "steps_info_1.json").read_text())
    del step["obs"]["open_pages_urls"]
    _write_json(gym_folder / "steps_info_1.json", step)
    err = _only(list(browsergym.read(gym_folder)))
    assert isinstance(err, InputError)
    assert err.path.endswith("steps_info_1.json")
    assert (err.field, err.trajectory_id) == ("obs.open_pages_urls", "task_7")


def test_browsergym_missing_step_and_malformed_json_are_yielded(gym_folder: Path):
    (gym_folder / "steps_info_1.json").unlink()
    err = _only(list(browsergym.read(gym_folder)))
    assert isinstance(err, InputError) and "step 1 is missing" in str(err)
    (gym_folder / "steps_info_1.json").write_text("{not json")
    err = _only(list(browsergym.read(gym_folder)))
    assert isinstance(err, InputError) and err.path.endswith("steps_info_1.json") and "malformed JSON" in str(err)


def test_browsergym_folder_without_steps_raises(tmp_path: Path):
    _write_json(tmp_path / "task_565" / "summary_info.json", {"n_steps": 0, "cum_reward": 0})
    assert browsergym.detect(tmp_path / "task_565")
    with pytest.raises(InputError, match="no steps_info"):
        list(browsergym.read(tmp_path / "task_565"))


# --- AgentLab pickles, read without AgentLab -------------------------------------------------------------------


def _fake_agentlab_module() -> types.ModuleType:
    """Classes named like AgentLab's, to pickle; they are removed again before reading."""
    module = types.ModuleType("agentlab.experiments.loop")

    @dataclasses.dataclass
    class StepTimestamps:
        env_start: float = 0
        env_stop: float = 0

    @dataclasses.dataclass
    class StepInfo:
        step: int = None
        obs: dict = None
        reward: float = 0
        action: str = None
        agent_info: dict = dataclasses.field(default_factory=dict)
        profiling: StepTimestamps = dataclasses.field(default_factory=StepTimestamps)

    for cls in (StepTimestamps, StepInfo):
        cls.__module__, cls.__qualname__ = module.__name__, cls.__name__
        setattr(module, cls.__name__, cls)
    return module


class _Exploit:
    def __reduce__(self):
        import os

        return (os.system, ("touch pwned",))


def _write_pickles(folder: Path, module: types.ModuleType, steps: list[dict]) -> None:
    names = ["agentlab", "agentlab.experiments", "agentlab.experiments.loop"]
    saved = {name: sys.modules.get(name) for name in names}
    sys.modules.update({name: module for name in names})
    try:
        for n, fields in enumerate(steps):
            info = module.StepInfo(step=n, **fields)
            with gzip.open(folder / f"step_{n}.pkl.gz", "wb") as fh:
                pickle.dump(info, fh)
    finally:
        for name, old in saved.items():
            if old is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = old


def test_agentlab_pickles_are_read_without_agentlab(tmp_path: Path, monkeypatch):
    np = pytest.importorskip("numpy")
    folder = tmp_path / "2024-05-01_GenericAgent_on_webarena.310_0"
    folder.mkdir()
    obs = {
        "goal": "Open the forum",
        "open_pages_urls": ("http://localhost:9999/",),
        "open_pages_titles": ("Postmill",),
        "active_page_index": np.array([0]),
        "axtree_txt": "[1] link 'Forums'",
        "last_action_error": "",
        "elapsed_time": np.array([1.5]),
    }
    module = _fake_agentlab_module()
    _write_pickles(
        folder,
        module,
        [
            {
                "obs": obs,
                "action": "click('1')",
                "agent_info": {"think": "Forums is the link.", "junk": _Exploit()},
                "profiling": module.StepTimestamps(env_start=T0 - 1, env_stop=T0),
            },
            {"obs": {**obs, "last_action_error": "boom"}, "action": None},
        ],
    )
    _write_json(folder / "summary_info.json", {"n_steps": 1, "cum_reward": 0.0})
    assert "agentlab" not in sys.modules
    assert browsergym.detect(folder)
    monkeypatch.chdir(tmp_path)
    traj = _only(list(browsergym.read(folder)))
    assert not (tmp_path / "pwned").exists(), "the unpickler ran a pickled callable"
    assert isinstance(traj, Trajectory)
    assert (traj.site, traj.goal, traj.outcome) == ("reddit", "Open the forum", "failure (reward 0.0)")
    s0, s1 = traj.states
    assert (s0.thought, s0.action, s0.action_error, s0.timestamp) == (
        "Forums is the link.",
        "click('1')",
        "boom",
        "2025-12-16T06:47:36.104Z",
    )
    assert s1.action is None and s1.text == "[1] link 'Forums'"


def test_unreadable_pickle_raises(tmp_path: Path):
    folder = tmp_path / "exp"
    folder.mkdir()
    (folder / "step_0.pkl.gz").write_bytes(gzip.compress(b"not a pickle"))
    with pytest.raises(InputError, match="step_0.pkl.gz"):
        list(browsergym.read(folder))


# --- browser-use ----------------------------------------------------------------------------------------------


def _entry(n: int, *, url: str, actions, thinking=None, errors=(), shot=None, message=None) -> dict:
    return {
        "model_output": {
            "evaluation_previous_goal": "ok",
            "memory": "m",
            "next_goal": "g",
            "action": actions,
            "thinking": thinking,
        },
        "result": [{"is_done": False, "error": e} for e in errors] or [{"is_done": False, "error": None}],
        "state": {
            "tabs": [],
            "url": url,
            "title": "Linear" if n else "Initial Actions",
            "screenshot_path": shot,
            "interacted_element": [None],
        },
        "metadata": {"step_start_time": 1771467730.5879939 + 10 * n, "step_end_time": 0, "step_number": n},
        "state_message": message,
    }


def _message(body: str) -> str:
    return (
        "<agent_history>\nAgent initialized\n</agent_history>\n<agent_state>\n<user_request>\n"
        "Rename the user.\n</user_request>\n</agent_state>\n<browser_state>\n" + body + "\n</browser_state>\n"
    )


@pytest.fixture
def bu_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "task_e1"
    history = [
        _entry(
            0, url="http://localhost:8030", actions=[{"navigate": {"url": "http://localhost:8030", "new_tab": False}}]
        ),
        _entry(
            1,
            url="http://localhost:8030/",
            thinking=" Type the name, then save. ",
            actions=[{"input": {"index": 16, "text": "Jordan R. Rivera", "clear": True}}, {"click": {"index": 29}}],
            shot="/tmp/browser_use_agent_gone/screenshots/step_1.png",
            message=_message("[16]<input />\n[29]<button />"),
        ),
        _entry(
            2,
            url="http://localhost:8030/",
            thinking="Done.",
            errors=["Element 40 not found", None],
            actions=[{"done": {"text": "Changed the user's name.", "success": True}}],
            shot="/tmp/browser_use_agent_gone/screenshots/step_2.png",
            message=_message("Profile updated"),
        ),
    ]
    _write_json(folder / "history.json", {"history": history})
    _write_json(
        folder / "result.json",
        {
            "task_id": "task_e1",
            "instruction": "Change the name to 'Jordan R. Rivera'.",
            "passed": True,
            "errors": [None, None, None],
        },
    )
    _png(folder / "screenshots" / "step_1.png")
    return folder


def test_browser_use_folder_maps_every_field(bu_folder: Path):
    assert browser_use.detect(bu_folder) and not browsergym.detect(bu_folder)
    assert detect_reader(bu_folder) is browser_use
    traj = _only(list(browser_use.read(bu_folder)))
    assert isinstance(traj, Trajectory)
    assert (traj.id, traj.goal, traj.outcome) == (
        "task_e1",
        "Change the name to 'Jordan R. Rivera'.",
        "success (reward 1.0)",
    )
    assert traj.start_url == "http://localhost:8030"
    s0, s1 = traj.states  # the synthetic "Initial Actions" entry is dropped
    assert s0.action == "input(index=16, text='Jordan R. Rivera', clear=True)\nclick(index=29)"
    assert s1.action == 'done(text="Changed the user\'s name.", success=True)'
    assert (s0.thought, s1.thought) == ("Type the name, then save.", "Done.")
    assert (s0.text, s1.text) == ("[16]<input />\n[29]<button />", "Profile updated")
    assert (s0.action_error, s1.action_error) == ("", "Element 40 not found")
    assert (s0.index, s0.url, s0.title) == (0, "http://localhost:8030/", "Linear")
    assert s0.timestamp == "2026-02-19T02:22:20.587Z"
    assert s0.screenshot == str((bu_folder / "screenshots" / "step_1.png").resolve())
    assert s1.screenshot is None  # its /tmp path vanished with the run and no copy was saved


def test_browser_use_without_result_json(bu_folder: Path):
    (bu_folder / "result.json").unlink()
    traj = _only(list(browser_use.read(bu_folder)))
    assert (traj.goal, traj.outcome) == ("Rename the user.", None)


def test_browser_use_missing_url_and_missing_screenshot(bu_folder: Path):
    doc = json.loads((bu_folder / "history.json").read_text())
    del doc["history"][2]["state"]["url"]
    _write_json(bu_folder / "history.json", doc)
    err = _only(list(browser_use.read(bu_folder)))
    assert isinstance(err, InputError) and err.path.endswith("history.json")
    assert (err.field, err.trajectory_id) == ("history[2].state.url", "task_e1")

    doc["history"][2]["state"].update(url="http://localhost:8030/", screenshot_path="shots/missing.png")
    _write_json(bu_folder / "history.json", doc)
    err = _only(list(browser_use.read(bu_folder)))
    assert isinstance(err, InputError) and err.field == "history[2].state.screenshot_path"
    assert "file not found" in str(err)


# --- LongMemEval-V2 content form ------------------------------------------------------------------------------


def _content_traj(tid: str) -> dict:
    return {
        "id": tid,
        "outcome": "success",
        "metadata": {
            "original_goal": ["Find the order", "of Sarah Miller."],
            "environment": "shopping_admin",
            "seed": 3,
        },
        "content": [
            {
                "step": 0,
                "url": "http://localhost:7780/admin",
                "action": "click('339')",
                "thoughts": "Reports.",
                "observation": {"text": "[339] link 'REPORTS'", "screenshot": f"screenshots/{tid}/0.png"},
            },
            {
                "step": 1,
                "url": "http://localhost:7780/admin/reports",
                "action": None,
                "thoughts": None,
                "observation": {"text": "Orders", "screenshot": f"{tid}/1.png"},
            },
        ],
    }


def test_lme_content_form(tmp_path: Path):
    tid = "web-traj-0001"
    _png(tmp_path / "screenshots" / tid / "0.png")
    _png(tmp_path / "screenshots" / tid / "1.png")
    file = tmp_path / "trajectories.jsonl"
    file.write_text(json.dumps(_content_traj(tid)) + "\n", encoding="utf-8")
    assert content_form.is_content_form(_content_traj(tid)) and not content_form.is_content_form(
        {"id": "x", "states": []}
    )
    assert detect_reader(file) is jsonl
    traj = _only(list(jsonl.read(file)))
    assert isinstance(traj, Trajectory)
    assert (traj.id, traj.goal, traj.site, traj.domain) == (
        tid,
        "Find the order of Sarah Miller.",
        "shopping_admin",
        "web",
    )
    assert traj.start_url == "http://localhost:7780/admin" and traj.outcome == "success"
    s0, s1 = traj.states
    assert (s0.text, s0.action, s0.thought) == ("[339] link 'REPORTS'", "click('339')", "Reports.")
    assert (s1.action, s1.thought, s1.index) == (None, None, 1)
    # "<id>/1.png" is found under screenshots/, as the benchmark's own loader looks there too
    assert s0.screenshot == str((tmp_path / "screenshots" / tid / "0.png").resolve())
    assert s1.screenshot == str((tmp_path / "screenshots" / tid / "1.png").resolve())
    assert traj.extra["metadata"]["seed"] == 3


def test_lme_content_form_errors(tmp_path: Path):
    tid = "web-traj-0002"
    _png(tmp_path / "screenshots" / tid / "0.png")
    no_metadata = {k: v for k, v in _content_traj("web-traj-0003").items() if k != "metadata"}
    bad_text = _content_traj("web-traj-0004")
    bad_text["content"][0]["observation"]["text"] = None
    file = tmp_path / "t.jsonl"
    file.write_text("\n".join(json.dumps(o) for o in (_content_traj(tid), no_metadata, bad_text)) + "\n")
    missing_shot, no_meta, no_text = list(jsonl.read(file))
    assert isinstance(missing_shot, InputError) and missing_shot.path == str(file) and missing_shot.line == 1
    assert (missing_shot.trajectory_id, missing_shot.field) == (tid, "content[1].observation.screenshot")
    assert "file not found" in str(missing_shot)
    assert isinstance(no_meta, InputError) and (no_meta.field, no_meta.line) == ("metadata", 2)
    assert isinstance(no_text, InputError) and no_text.field == "content[0].observation.text"


# --- the real shared data, written back into the source formats -----------------------------------------------


def _unix(iso: str) -> float:
    # half a millisecond past the stamp, so that float rounding cannot move it to the previous millisecond
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() + 0.0005


def _as_browsergym(traj: dict, folder: Path) -> None:
    states = traj["states"]
    for i, s in enumerate(states):
        raw = s["action"]
        if raw is not None and s["thought"] is not None:
            raw = f"<think>\n{s['thought']}\n</think>\n<action>\n```{s['action']}```\n</action>"
        obs = {
            "goal": traj["goal"],
            "open_pages_urls": [s["url"]],
            "open_pages_titles": [s["title"]],
            "active_page_index": [0],
            "axtree_txt": s["accessibility_tree"],
            "last_action_error": states[i - 1]["action_error"] if i else "",
        }
        _write_json(
            folder / f"steps_info_{i}.json",
            {"step": i, "obs": obs, "action": raw, "profiling": {"env_stop": _unix(s["timestamp"])}},
        )
    reward = float(traj["outcome"].split("reward ")[1].rstrip(")"))
    _write_json(folder / "summary_info.json", {"cum_reward": reward})


def _parse_calls(text: str) -> list[dict]:
    calls = []
    for line in text.splitlines():
        call = ast.parse(line, mode="eval").body
        calls.append({call.func.id: {k.arg: ast.literal_eval(k.value) for k in call.keywords}})
    return calls


def _as_browser_use(traj: dict, folder: Path) -> None:
    history = [
        {
            "model_output": None,
            "result": [],
            "metadata": {"step_number": 0},
            "state": {"url": traj["start_url"], "title": "Initial Actions"},
        }
    ]
    for s in traj["states"]:
        history.append(
            {
                "model_output": {"thinking": s["thought"], "action": _parse_calls(s["action"] or "")},
                "result": [{"error": e} for e in s["action_error"].split("\n") if e],
                "state": {"url": s["url"], "title": s["title"], "screenshot_path": None},
                "metadata": {"step_start_time": _unix(s["timestamp"])},
                "state_message": f"<browser_state>\n{s['accessibility_tree']}\n</browser_state>",
            }
        )
    _write_json(folder / "history.json", {"history": history})
    _write_json(folder / "result.json", {"instruction": traj["goal"], "passed": traj["outcome"].startswith("success")})


def _expected(traj: dict) -> list[tuple]:
    return [
        (s["url"], s["title"], s["accessibility_tree"], s["thought"], s["action"], s["action_error"], s["timestamp"])
        for s in traj["states"]
    ]


def _got(traj: Trajectory) -> list[tuple]:
    return [(s.url, s.title, s.text, s.thought, s.action, s.action_error, s.timestamp) for s in traj.states]


def _records(path: Path):
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        yield from (json.loads(line) for line in fh)


@pytest.mark.slow
def test_shared_data_round_trips_through_the_source_formats(tmp_path: Path):
    data = require_shared()
    for traj in _records(data / "webarena" / "trajectories.jsonl.gz"):
        folder = tmp_path / "wa" / traj["id"]
        _as_browsergym(traj, folder)
        got = _only(list(detect_reader(folder).read(folder)))
        assert isinstance(got, Trajectory), got
        assert (got.site, got.goal, got.outcome, got.start_url) == (
            traj["site"],
            traj["goal"],
            traj["outcome"],
            traj["start_url"],
        ), traj["id"]
        assert _got(got) == _expected(traj), traj["id"]
    for traj in _records(data / "infinity" / "trajectories.jsonl.gz"):
        folder = tmp_path / "inf" / traj["id"]
        _as_browser_use(traj, folder)
        got = _only(list(detect_reader(folder).read(folder)))
        assert isinstance(got, Trajectory), got
        assert (got.goal, got.outcome, got.start_url) == (traj["goal"], traj["outcome"], traj["start_url"])
        assert _got(got) == _expected(traj), traj["id"]
