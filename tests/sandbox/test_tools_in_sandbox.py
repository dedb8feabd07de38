"""Every agent tool runs in every real backend, through the ToolBox, as a query would call it; a bad argument is a
tool error the policy reads, never a crashed query."""
from __future__ import annotations

import pytest

from runbook.agent.tools import TOOL_SPECS, ToolBox
from runbook.agent.types import ToolCall
from runbook.sandbox import get_sandbox

from conftest import TEST_LIMITS  # noqa: E402  (tests/sandbox/conftest.py)


@pytest.fixture
def small_store(tmp_path):
    from runbook.store import Store
    from tests.conftest import make_trajectory
    store = Store(tmp_path / "store", create=True)
    with store.writer() as writer:
        writer.insert(make_trajectory("t-check", 3))
    for path in [tmp_path, *tmp_path.rglob("*")]:  # readable by the sandbox user, as `runbook insert` leaves it
        path.chmod(0o755 if path.is_dir() else 0o644)
    return store.root


CALLS = {
    "search": {"pattern": "Item"},
    "show": {"trajectory_id": "t-check", "states": "1"},
    "read": {"path": "summaries/trajectories.tsv"},
    "python": {"code": "import rbk\nprint([t.id for t in rbk.trajectories()])"},
}


def test_every_tool_that_runs_a_command_is_exercised_here():
    assert {spec.name for spec in TOOL_SPECS} - {"finish"} == set(CALLS)


@pytest.mark.parametrize("tool", sorted(CALLS))
def test_every_agent_tool_runs(make_box, small_store, tool):
    box = make_box(small_store)
    result = ToolBox(box).run(ToolCall("c1", tool, CALLS[tool]))
    assert result.error is None and result.exit_code == 0, result.output
    assert "t-check" in result.output, result.output


def test_a_nul_byte_in_an_argument_is_a_tool_error(tiny_store):
    with get_sandbox("local", tiny_store, **TEST_LIMITS) as box:
        toolbox = ToolBox(box)
        for name, args in [("search", {"pattern": "a\0b"}), ("python", {"code": "print(1)\0"}),
                           ("read", {"path": "runbook.json\0"})]:
            result = toolbox.run(ToolCall("c1", name, args))
            assert result.error and "NUL" in result.error, result.output
