"""`runbook answer` and `runbook replay` through click, with the fake servers standing in for both models."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from runbook.cli.answer import answer
from runbook.cli.replay import replay
from runbook.config import CONFIG_ENV, SETTINGS
from runbook.models.fakes import FakeOpenAIServer, call, finish, text
from runbook.pools.build import insert_with_pools
from runbook.store import Store
from tests.conftest import make_trajectory


@pytest.fixture
def store_path(tmp_path, monkeypatch):
    for setting in SETTINGS:
        monkeypatch.delenv(setting.env, raising=False)
    monkeypatch.delenv(CONFIG_ENV, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("RUNBOOK_TRANSCRIPTS", str(tmp_path / "transcripts"))
    store = Store(tmp_path / "store", create=True)
    insert_with_pools(store, make_trajectory("wa-1", 3, texts=["home", "StaticText 'Grand Total $41.00'", "done"]))
    return str(store.root)


def invoke(command, store_path, *args):
    return CliRunner().invoke(command, list(args), obj={"store_path": store_path})


def test_answer_without_a_reader_says_how_to_configure_one(store_path):
    result = invoke(answer, store_path, "What is the grand total?")
    assert result.exit_code != 0
    assert "No reader is configured" in str(result.exception) and "RUNBOOK_READER_MODEL" in str(result.exception)


def test_answer_prints_the_answer_and_the_evidence_it_used(store_path, monkeypatch):
    agent_script = [call("search", pattern="Grand Total"), finish("The total is on wa-1 state 1.", [("wa-1", 1, 1)])]
    with FakeOpenAIServer(agent_script) as agent, FakeOpenAIServer([text("It is \\boxed{$41.00}")]) as reader:
        monkeypatch.setenv("OPENAI_BASE_URL", agent.base_url)
        monkeypatch.setenv("RUNBOOK_READER_PROVIDER", "openai")
        monkeypatch.setenv("RUNBOOK_READER_MODEL", "reader")
        monkeypatch.setenv("RUNBOOK_READER_BASE_URL", reader.base_url)
        # the script is the coding agent's (method C): the default method, auto, would rank with R's pools first
        result = invoke(
            answer, store_path, "What is the grand total?", "--method", "c", "--policy", "openai", "--sandbox", "local"
        )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "answer: $41.00"
    assert "  analysis: The total is on wa-1 state 1." in lines
    assert any(
        line.startswith("  1. trajectory wa-1, state 1 (") and line.endswith("trajectories/wa-1/states/0001.md")
        for line in lines
    )
    user = reader.requests[0]["messages"][1]["content"]
    assert "Grand Total $41.00" in "".join(part.get("text", "") for part in user)

    replayed = CliRunner().invoke(replay, [])
    assert replayed.exit_code == 0, replayed.output
    assert 'call search({"pattern": "Grand Total"})' in replayed.output
    assert "stop (finished): finish called with 1 span(s)" in replayed.output
    raw = CliRunner().invoke(replay, ["--json"])
    assert json.loads(raw.output.splitlines()[0])["type"] == "start"


def test_commands_have_help_with_an_example():
    for command in (answer, replay):
        assert "Example:" in command.help
