"""Every agent tool runs in every real backend, through the ToolBox, as a query would call it; a bad argument is a
tool error the policy reads, never a crashed query."""
from __future__ import annotations

from runbook.agent.tools import ToolBox
from runbook.agent.types import ToolCall
from runbook.sandbox import get_sandbox

from conftest import TEST_LIMITS  # noqa: E402  (tests/sandbox/conftest.py)


def test_a_nul_byte_in_an_argument_is_a_tool_error(tiny_store):
    with get_sandbox("local", tiny_store, **TEST_LIMITS) as box:
        toolbox = ToolBox(box)
        for name, args in [("search", {"pattern": "a\0b"}), ("python", {"code": "print(1)\0"}),
                           ("read", {"path": "runbook.json\0"})]:
            result = toolbox.run(ToolCall("c1", name, args))
            assert result.error and "NUL" in result.error, result.output
