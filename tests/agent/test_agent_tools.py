"""Tool specs, argument checks, and the sandbox commands calls become (run in the fake sandbox)."""

from __future__ import annotations

import pytest

from runbook.agent.exceptions import Finished
from runbook.agent.tools import (
    MAX_SPAN_STATES,
    TOOL_SPECS,
    SeenStates,
    ToolBox,
    ToolError,
    command_for,
    parse_states,
    store_relative,
)
from runbook.agent.types import Span
from runbook.errors import SandboxError
from runbook.models.messages import ToolCall
from runbook.sandbox import get_sandbox


@pytest.fixture
def box(tmp_path):
    replies = {}
    sandbox = get_sandbox("fake", tmp_path, handler=lambda argv, stdin: replies.get(argv[0], "ok"))
    sandbox.replies = replies
    with sandbox:
        yield sandbox


def run(box, name, check_spans=None, **arguments):
    return ToolBox(box, check_spans=check_spans).run(ToolCall("c1", name, arguments))


def test_every_spec_is_an_object_schema_with_a_description():
    assert [s.name for s in TOOL_SPECS] == ["recall", "search", "show", "read", "python", "finish"]
    for spec in TOOL_SPECS:
        assert spec.description and spec.parameters["type"] == "object"
        assert set(spec.parameters["required"]) <= set(spec.parameters["properties"])


@pytest.mark.parametrize(
    "name, arguments, message",
    [
        ("grep", {"pattern": "x"}, "there is no tool 'grep'; the tools are recall, search, show, read, python, finish"),
        ("search", {}, "search: missing required argument(s) pattern"),
        ("search", {"pattern": 3}, "search.pattern must be string, got 3"),
        ("search", {"pattern": "x", "regex": "y"}, "search: unknown argument(s) regex; expected pattern,"),
        ("search", {"pattern": "x", "sort": "oldest"}, "search.sort must be one of time, newest, count"),
        ("search", {"pattern": "x", "max_results": 0}, "search.max_results must be at least 1, got 0"),
        ("show", {"trajectory_id": "t", "states": "two"}, "states must be an index ('3'), a range ('3-5')"),
        ("read", {"path": "../etc/passwd"}, "path '../etc/passwd' is outside the store"),
        ("read", {"path": "/etc/passwd"}, "path '/etc/passwd' is outside the store"),
        (
            "finish",
            {"analysis": "a", "spans": [{"trajectory_id": "t", "start_state_index": 2}]},
            "finish.spans[0]: missing required argument(s) end_state_index",
        ),
        (
            "finish",
            {"analysis": "a", "spans": [{"trajectory_id": "t", "start_state_index": 3, "end_state_index": 1}]},
            "ends before it starts",
        ),
    ],
)
def test_malformed_calls_are_not_run_and_say_what_to_fix(box, name, arguments, message):
    result = run(box, name, **arguments)
    assert result.error is not None and message in result.error, result.error
    assert result.output.startswith("error: ") and result.exit_code == 2
    assert box.calls == []


def test_unparsable_arguments_from_the_policy_are_reported(box):
    result = ToolBox(box).run(ToolCall("c1", "search", {}, error="not valid JSON: Expecting value at 0"))
    assert "could not be parsed (not valid JSON: Expecting value at 0)" in result.error
    assert box.calls == []


def test_integers_given_as_digits_are_accepted(box):
    run(box, "search", pattern="x", max_results="5")
    assert box.calls == [["search", "--max-results", "5", "--", "x"]]


def test_search_show_read_python_become_these_commands():
    assert command_for(
        "search",
        {"pattern": "-v", "ignore_case": True, "field": "error", "site": "gitlab", "sort": "newest", "count": True},
    ) == (
        ["search", "--ignore-case", "--count", "--field", "error", "--site", "gitlab", "--sort", "newest", "--", "-v"],
        None,
    )
    assert command_for("show", {"trajectory_id": "wa-1", "states": 3, "grep": "Total", "context": 1}) == (
        ["show", "--grep", "Total", "--context", "1", "--", "wa-1", "3"],
        None,
    )
    assert command_for("python", {"code": "print(1)"}) == (["python3", "-"], "print(1)")
    line, stdin = command_for("read", {"path": "/store/summaries/actions.txt", "start_line": 5, "end_line": 9})
    assert stdin is None and "f=summaries/actions.txt" in line and "a=5 -v b=9" in line


def test_states_and_paths_are_normalised():
    assert parse_states(" 3 - 5 ") == "3-5" and parse_states("1, 4-6") == "1,4-6" and parse_states("LAST") == "last"
    assert store_relative("$RUNBOOK_STORE_DIR/summaries/x") == "summaries/x" and store_relative("/store") == "."


def test_nonzero_exit_is_stated_and_empty_output_named(box):
    box.replies["search"] = (1, "")
    result = run(box, "search", pattern="nothing")
    assert result.output == "(no output)\n[exit code 1]" and result.error is None


def test_finish_raises_with_its_spans(box):
    with pytest.raises(Finished) as stop:
        run(
            box,
            "finish",
            analysis=" shows it ",
            spans=[{"trajectory_id": "t-1", "start_state_index": 1, "end_state_index": 2}],
        )
    assert stop.value.analysis == "shows it" and stop.value.spans == [Span("t-1", 1, 2)]


def test_finish_over_the_state_limit_is_refused(box):
    spans = [{"trajectory_id": "t", "start_state_index": 0, "end_state_index": MAX_SPAN_STATES}]
    result = run(box, "finish", analysis="a", spans=spans)
    assert f"the spans cover {MAX_SPAN_STATES + 1} states; at most {MAX_SPAN_STATES}" in result.error


def test_finish_checks_spans_against_the_store(box):
    def check(spans):
        raise ToolError(f"no trajectory {spans[0].trajectory_id!r} in the store")

    result = run(
        box,
        "finish",
        check_spans=check,
        analysis="a",
        spans=[{"trajectory_id": "nope", "start_state_index": 0, "end_state_index": 0}],
    )
    assert result.error == "no trajectory 'nope' in the store"


def test_seen_states_rank_shown_above_found():
    seen = SeenStates()
    seen.note("search", {}, "# 'x': 3 lines\nt-1 state 0 @ 2025 http://a\n  L3: x\nt-2 state 4 @ 2025 http://b")
    seen.note("show", {"trajectory_id": "t-2"}, "== t-2 state 4 of 9\ntime: ...")
    seen.note("show", {"trajectory_id": "t-3"}, "# t-3: 'x' matches\n== state 7 @ 2025 http://c")
    seen.note("python", {}, "trajectories/t-5/states/0002.md:12:x")
    assert seen.ranked() == [("t-2", 4), ("t-1", 0), ("t-3", 7), ("t-5", 2)]


def test_a_call_the_sandbox_refuses_is_reported_not_raised(tmp_path):
    def refuse(argv, stdin):
        raise SandboxError("stdin of 1,100,000 characters is over the 1,000,000 limit")

    with get_sandbox("fake", tmp_path, handler=refuse) as refusing:
        result = run(refusing, "python", code="x" * 1_100_000)
    assert result.error == (
        "the sandbox could not run this call: stdin of 1,100,000 characters is over the 1,000,000 limit"
    )


def test_finish_keeps_recall_ids_once_in_order_and_refuses_other_strings(box):
    toolbox = ToolBox(box)
    with pytest.raises(Finished) as stop:
        toolbox.run(ToolCall("c1", "finish", {"analysis": "a", "spans": [], "recall": ["s5", "n2", "s5"]}))
    assert stop.value.recall == ["s5", "n2"]
    result = toolbox.run(ToolCall("c2", "finish", {"analysis": "a", "spans": [], "recall": ["wa-1 state 3"]}))
    assert "recall ids look like n12, e34 or s56" in result.error


def test_recall_becomes_the_recall_program_and_an_empty_query_is_refused(box):
    assert command_for("recall", {"query": "cancel an order", "states": 4}) == (
        ["recall", "--states", "4", "--", "cancel an order"],
        None,
    )
    assert "query is empty" in run(box, "recall", query="  ").error
