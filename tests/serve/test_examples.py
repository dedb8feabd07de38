"""docs/examples: recorded BrowserGym/AgentLab and browser-use steps, in the shapes those frameworks write,
streamed into a real server with the Python client and with curl (item 10 of issue 24)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from runbook.serve import MemoryService, create_app
from runbook.serve.client import Client, RequestRefused
from tests.serve.test_http import Server

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples"


@pytest.fixture
def served(tmp_path, clean_env):
    service = MemoryService(tmp_path / "store", create=True)
    with Server(create_app(service)) as url:
        yield service, url
    service.close()


def stored(service, prefix: str):
    (row,) = [r for r in service.store.rows() if r.id.startswith(prefix)]
    return service.store.load(row.id)


def test_the_python_example_streams_both_frameworks_steps_as_recorded(served):
    service, url = served
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for name in ("agentlab_steps.json", "browser_use_steps.json"):
        run = subprocess.run(
            [sys.executable, str(EXAMPLES / "stream_steps.py"), str(EXAMPLES / name), url],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert run.returncode == 0, run.stderr
        assert "'status': 'inserted'" in run.stdout
    gym = stored(service, "agentlab_steps")
    assert [s.action for s in gym.states] == ["click('131')", "click('174')", "fill('171', '01/01/2022')"]
    assert gym.states[1].action_error.startswith("The report needs a date range")  # reported by the next obs
    assert gym.states[0].thought == "The Bestsellers report is under Reports."
    assert gym.states[2].timestamp == "2025-12-16T06:03:34.000Z"
    bu = stored(service, "browser_use_steps")
    assert bu.states[0].action.startswith("input(index=16, text='Jordan R. Rivera'")
    assert "Element index 29 not found" in bu.states[0].action_error
    assert bu.states[1].text.startswith("Current tab: 0") and bu.states[1].title == "Account settings - Linear"


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_the_curl_example_streams_the_same_steps(served):
    service, url = served
    run = subprocess.run(
        ["bash", str(EXAMPLES / "stream_steps.sh"), str(EXAMPLES / "browser_use_steps.json"), url],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert '"status":"inserted"' in run.stdout
    assert len(stored(service, "curl-run-").states) == 2


def test_the_client_raises_the_servers_error_with_its_field(served):
    _, url = served
    client = Client(url)
    client.open_trajectory("c-1")
    with pytest.raises(RequestRefused) as refused:
        client.append_state("c-1", {"url": "u", "colour": "red"})
    assert refused.value.status == 400 and refused.value.field == "colour"


def _readme_region(script: Path) -> str:
    """The part of an example the README shows: between '# README: ...' and '# end README'."""
    text = script.read_text()
    start = text.index("\n", text.index("# README: ")) + 1
    return text[start : text.index("# end README")].rstrip("\n")


@pytest.mark.parametrize(
    "script,steps,prefix,n",
    [
        ("browsergym_agent.py", "agentlab_steps.json", "bgym-", 3),
        ("browser_use_agent.py", "browser_use_steps.json", "browser-use-", 2),
    ],
)
def test_the_readmes_agent_loops_run_as_written(served, script, steps, prefix, n):
    """Item 17 of issue 34: the README's BrowserGym and browser-use snippets named run_id, agent, env, obs and
    memory without defining them. Each is now a whole script, shown in the README as it is, run here over a real
    server with a recorded run played back."""
    service, url = served
    assert _readme_region(EXAMPLES / script) in (ROOT / "README.md").read_text()
    run = subprocess.run(
        [sys.executable, str(EXAMPLES / script), "--replay", str(EXAMPLES / steps), "--url", url],
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    run_stored = stored(service, prefix)
    assert len(run_stored.states) == n and run_stored.outcome and all(s.timestamp for s in run_stored.states)
    recorded = json.loads((EXAMPLES / steps).read_text())
    if prefix == "bgym-":
        assert [s.action for s in run_stored.states] == [r["action"] for r in recorded]
        assert run_stored.states[0].thought == recorded[0]["agent_info"]["think"]
    else:
        assert "Element index 29 not found" in run_stored.states[0].action_error
