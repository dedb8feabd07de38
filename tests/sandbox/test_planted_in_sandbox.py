"""The sandbox's programs skip what is not a regular file, as the host does: a FIFO planted among the state files or
summaries costs a tool call no wait (it cost the call's whole timeout: method C took 61 s), and a symbolic link is
not followed. Every reading tool, in every real backend."""

from __future__ import annotations

import os

import pytest

from runbook.agent.tools import ToolBox
from runbook.checks.sandbox import SAMPLE_ID, sample_store
from runbook.models.messages import ToolCall

CALL_SECONDS = 20.0
STATES = f"trajectories/{SAMPLE_ID}/states"


@pytest.fixture(scope="module")
def planted_store(tmp_path_factory):
    """The check's sample store (states 0-2) with state 1 a FIFO, state 2 a link to /etc/passwd (present inside
    every sandbox), and summaries/actions.txt a FIFO."""
    root = sample_store(tmp_path_factory.mktemp("planted"))
    states = root / STATES
    (states / "0001.md").unlink()
    os.mkfifo(states / "0001.md")
    (states / "0002.md").unlink()
    os.symlink("/etc/passwd", states / "0002.md")
    (root / "summaries" / "actions.txt").unlink()
    os.mkfifo(root / "summaries" / "actions.txt")
    for path in (states / "0001.md", root / "summaries" / "actions.txt"):
        path.chmod(0o644)
    return root


RBK_STATES = (
    "import rbk\n"
    "for i in range(3):\n"
    "    try:\n"
    f"        print(rbk.state('{SAMPLE_ID}', i).text)\n"
    "    except rbk.RbkError as exc:\n"
    "        print('refused:', exc)\n"
)
DETAIL = (
    "from runbook.core.detail import DetailParams, detail_output\n"
    f"params = DetailParams(states=[['{SAMPLE_ID}', 0, 2], ['{SAMPLE_ID}', 1, 2], ['{SAMPLE_ID}', 2, 2]],\n"
    "                       patterns=[{'text': 'Item', 'kind': 'term'}])\n"
    "print(detail_output(params).lines)\n"
)
CALLS = [
    ("show", {"trajectory_id": SAMPLE_ID, "states": "0-2"}),
    ("show", {"trajectory_id": SAMPLE_ID}),
    ("read", {"path": f"{STATES}/0001.md"}),
    ("read", {"path": f"{STATES}/0002.md"}),
    ("read", {"path": "summaries/actions.txt"}),
    ("search", {"pattern": "Item"}),
    ("search", {"pattern": "root"}),
    ("python", {"code": RBK_STATES}),
    ("python", {"code": DETAIL}),
]


@pytest.mark.parametrize("tool,args", CALLS, ids=[f"{tool}-{n}" for n, (tool, _) in enumerate(CALLS)])
def test_a_tool_skips_fifos_and_links_without_waiting(make_box, planted_store, tool, args):
    box = make_box(planted_store)
    result = ToolBox(box, call_seconds=CALL_SECONDS).run(ToolCall("c1", tool, args))
    assert result.seconds < CALL_SECONDS / 2, f"{tool} waited {result.seconds:.1f} s on a FIFO: {result.output}"
    assert "root:x:0:0" not in result.output, "a link in the store was followed"
    if tool in ("show", "python") and "0-2" in str(args) or "rbk.state" in str(args):
        assert "Item 0" in result.output, result.output  # the regular state is still read
