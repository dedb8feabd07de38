"""Every agent tool runs in every real backend, through the ToolBox, as a query would call it, over a store inserted
as `runbook insert` does; a bad argument is a tool error the policy reads, never a crashed query."""

from __future__ import annotations

import pytest
from conftest import TEST_LIMITS  # noqa: E402  (tests/sandbox/conftest.py)

from runbook.agent.tools import TOOL_SPECS, ToolBox
from runbook.checks.sandbox import SAMPLE_ARGUMENTS, SAMPLE_ID, sample_store, tools_with_commands
from runbook.models.messages import ToolCall
from runbook.sandbox import get_sandbox

TOOLS = tools_with_commands()
"""(tool, arguments) for every tool of TOOL_SPECS that runs a sandbox command: a tool added later is run too."""


@pytest.fixture(scope="module")
def small_store(tmp_path_factory):
    return sample_store(tmp_path_factory.mktemp("tools"))


def test_every_tool_but_finish_runs_a_command_and_the_known_ones_have_arguments():
    assert {tool for tool, _ in TOOLS} == {spec.name for spec in TOOL_SPECS} - {"finish"}
    assert set(SAMPLE_ARGUMENTS) <= {tool for tool, _ in TOOLS}


@pytest.mark.parametrize("tool,args", TOOLS, ids=[tool for tool, _ in TOOLS])
def test_every_agent_tool_runs(make_box, small_store, tool, args):
    box = make_box(small_store)
    result = ToolBox(box).run(ToolCall("c1", tool, args))
    assert result.error is None and result.exit_code == 0, result.output
    if tool in SAMPLE_ARGUMENTS:
        assert SAMPLE_ID in result.output, result.output


def test_a_nul_byte_in_an_argument_is_a_tool_error(tiny_store):
    with get_sandbox("local", tiny_store, **TEST_LIMITS) as box:
        toolbox = ToolBox(box)
        for name, args in [
            ("search", {"pattern": "a\0b"}),
            ("python", {"code": "print(1)\0"}),
            ("read", {"path": "runbook.json\0"}),
        ]:
            result = toolbox.run(ToolCall("c1", name, args))
            assert result.error and "NUL" in result.error, result.output
