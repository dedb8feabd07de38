"""A state file's header keeps one line per field for every parser that reads it (Python's splitlines, text-mode
iteration, ripgrep's \\n lines, the sandbox's rbk and show), whatever the values hold; ids with control characters
are refused at validation, and the summaries stay one line per trajectory and per action."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runbook.errors import InputError
from runbook.ingest import insert_paths
from runbook.store.statefile import HEADER_FIELDS, parse_state, render_state
from runbook.trajectory import State, Trajectory
from runbook.trajectory.model import trajectory_from_dict
from tests.conftest import make_trajectory, write_jsonl

ROOT = Path(__file__).resolve().parents[2]
# the sandbox programs, wherever this checkout keeps them (tools/, or runbook/sandbox/programs/ in the package)
TOOLS = next(
    folder for folder in (ROOT / "runbook" / "sandbox" / "programs", ROOT / "tools") if (folder / "rbk.py").is_file()
)
# every character some parser of the header takes as a line break
BREAKS = ["\n", "\r", "\r\n", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


def _rbk():
    spec = importlib.util.spec_from_file_location("rbk_under_test", TOOLS / "rbk.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _hostile(brk: str) -> Trajectory:
    state = State(
        index=0,
        url=f"http://a/{brk}error: INJECTED-URL",
        title=f"T{brk}thought: INJECTED-TITLE",
        timestamp=f"2025-12-16T06:00:00Z{brk}action: INJECTED-TIME",
        text="page line\n",
        action=f"click('1'){brk}error: INJECTED-ACTION",
        action_error=f"boom{brk}title: INJECTED-ERROR",
        thought=f"think{brk}url: INJECTED-THOUGHT",
    )
    return Trajectory(id="wa-1", states=[state], site="shop")


@pytest.mark.parametrize("brk", BREAKS, ids=[b.encode("unicode_escape").decode() for b in BREAKS])
def test_every_header_value_stays_on_its_line_for_every_parser(brk):
    text = render_state(_hostile(brk), _hostile(brk).states[0], None)
    head = text.partition("\n---\n")[0]
    assert len(head.splitlines()) == len(HEADER_FIELDS)  # Python's splitlines, as parse_state reads it
    assert len(head.split("\n")) == len(HEADER_FIELDS)  # ripgrep's lines
    assert [line.partition(":")[0] for line in head.splitlines()] == list(HEADER_FIELDS)
    fields, body = parse_state(text)
    assert set(fields) == set(HEADER_FIELDS) and body == "page line\n"
    assert fields["url"].startswith("http://a/") and "INJECTED-URL" in fields["url"]
    assert "INJECTED-ERROR" in fields["error"] and "INJECTED-THOUGHT" in fields["thought"]
    rbk = _rbk()
    rbk_fields, rbk_body, n_header = rbk.parse_state_text(text)
    assert rbk_fields == fields and n_header == len(HEADER_FIELDS) + 1


@pytest.mark.parametrize("brk", ["\r", "\x85", "\u2028"], ids=["cr", "nel", "ls"])
def test_the_sandbox_tools_see_no_injected_field(tmp_path, brk):
    from runbook.store import Store

    store = Store(tmp_path / "s", create=True)
    with store.writer() as writer:
        writer.insert(_hostile(brk))
    rbk = _rbk()
    fields, n_header = rbk.read_header(str(store.state_path("wa-1", 0)))  # text-mode line iteration
    assert n_header == len(HEADER_FIELDS) + 1 and fields["error"].startswith("boom")
    hits = rbk.StoreReader(str(store.root)).search("INJECTED", field="error")
    assert [
        hit["line"] for hit in hits["hits"] if "INJECTED-ACTION" in hit["line"] or "INJECTED-URL" in hit["line"]
    ] == []
    shown = subprocess.run(
        [sys.executable, str(TOOLS / "show"), "--store", str(store.root), "wa-1", "0"],
        capture_output=True,
        text=True,
        # this checkout's core beside the programs, as the sandbox has it (not whatever runbook is installed)
        env={"PYTHONPATH": os.pathsep.join([str(TOOLS), str(ROOT)])},
        timeout=30,
    )
    assert shown.returncode == 0, shown.stderr
    assert not any(
        line.startswith(
            ("error: INJECTED", "url: INJECTED", "title: INJECTED", "action: INJECTED", "thought: INJECTED")
        )
        for line in shown.stdout.splitlines()
    )


@pytest.mark.parametrize("bad", ["a\nb", "a\rb", "a\tb", "a\x00b", "a\x85b", "a\u2028b", "a\u202eb", "a\x1bb"])
def test_ids_with_control_characters_are_refused(bad):
    with pytest.raises(InputError, match="control character") as caught:
        trajectory_from_dict({"id": bad, "states": [{"state_index": 0, "url": "http://a/"}]}, path="in.jsonl")
    assert caught.value.field == "id" and "U+" in str(caught.value)


def test_ids_with_control_characters_are_refused_by_every_reader(tmp_path):
    from runbook.trajectory.readers import browser_use, jsonl

    content = {
        "id": "lme\n1",
        "metadata": {"original_goal": "g"},
        "content": [{"url": "http://a/", "observation": {"text": "x"}}],
    }
    (tmp_path / "lme.jsonl").write_text(json.dumps(content) + "\n")
    (item,) = list(jsonl.read(tmp_path / "lme.jsonl"))
    assert isinstance(item, InputError) and item.field == "id"
    folder = tmp_path / "run\nfake"
    folder.mkdir()
    entry = {
        "model_output": {"action": [{"done": {"text": "ok"}}]},
        "result": [],
        "state": {"url": "http://a/", "title": "A"},
    }
    (folder / "history.json").write_text(json.dumps({"history": [entry]}))
    (item,) = list(browser_use.read(folder))
    assert isinstance(item, InputError) and item.field == "id" and "folder name" in str(item)


def test_the_library_insert_refuses_such_an_id_too(store):
    with pytest.raises(InputError, match="control character"), store.writer() as writer:
        writer.insert(make_trajectory("evil\nid"))
    assert len(store) == 0


def test_summaries_stay_one_line_per_trajectory_and_per_action(store, tmp_path):
    traj = make_trajectory("wa-1", 2, site="shop\n## forged | x", goal="g\u2028forged goal")
    traj.outcome = "success\rforged"
    traj.states[0].url = "http://a/\n  99 forged_action()  @ http://b/"
    traj.states[1].url = "http://a/\u2028x"
    insert_paths(store, [write_jsonl(tmp_path / "a.jsonl", [traj, make_trajectory("wa-2", 1)])], workers=1)
    table = (store.root / "summaries" / "trajectories.tsv").read_text(encoding="utf-8")
    assert len(table.splitlines()) == 3 and all(len(row.split("\t")) == 9 for row in table.splitlines())
    actions = (store.root / "summaries" / "actions.txt").read_text(encoding="utf-8")
    assert [line for line in actions.splitlines() if line.startswith("##")] == [
        "## wa-1 | shop ## forged | x | success forged | 2 states | 2025-12-16T06:00:00.000Z",
        "## wa-2 | shop | success (reward 1.0) | 1 states | 2025-12-16T06:00:00.000Z",
    ]
    assert len(actions.splitlines()) == actions.count("\n") and "forged_action" in actions
    assert not any(line.lstrip().startswith("99 forged_action") for line in actions.splitlines())
