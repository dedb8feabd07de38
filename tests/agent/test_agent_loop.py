"""The agent loop with a scripted policy and the fake sandbox: stops and their reasons, the repeated-call catch,
trimming, nudges, and the transcript."""

from __future__ import annotations

import time

import pytest

from runbook.agent.exceptions import CostLimit, Finished, PolicyFailed, StepLimit, Stuck, TimeLimit, TokenLimit
from runbook.agent.loop import NUDGE, AgentLoop
from runbook.agent.tools import ToolBox
from runbook.agent.transcript import TranscriptWriter, read_transcript, render_replay
from runbook.agent.types import Task
from runbook.config import Limits
from runbook.errors import ConfigError
from runbook.models.fakes import call, finish, text
from runbook.models.messages import Message
from runbook.policies.scripted import ScriptedPolicy
from runbook.sandbox import get_sandbox

SEARCH_OUTPUT = "# 'x': 2 matching lines\nt-1 state 2 @ 2025-12-16 http://a\n  L9: x\nt-1 state 3 @ 2025 http://a"


@pytest.fixture
def box(tmp_path):
    with get_sandbox("fake", tmp_path, handler=lambda argv, stdin: SEARCH_OUTPUT) as sandbox:
        yield sandbox


def run_loop(box, script, tmp_path=None, *, price=None, **limits):
    transcript = TranscriptWriter(tmp_path / "t.jsonl") if tmp_path else None
    loop = AgentLoop(ScriptedPolicy(script), ToolBox(box), Limits(**limits), transcript=transcript, price=price)
    run = loop.run("system", Message("user", "Question: where is x?"), Task("where is x?"))
    if transcript:
        transcript.close()
    return run


def test_finish_stops_the_loop_with_its_analysis_and_spans(box):
    run = run_loop(box, [call("search", pattern="x"), finish("x is on state 2", [("t-1", 2, 2)])])
    assert isinstance(run.stop, Finished) and run.finished and run.steps == 2
    assert run.analysis == "x is on state 2" and [s.to_json() for s in run.spans] == [
        {"trajectory_id": "t-1", "start_state_index": 2, "end_state_index": 2}
    ]
    assert box.calls == [["search", "--", "x"]]


def test_step_limit_stops_with_its_reason_and_keeps_what_was_seen(box):
    run = run_loop(box, [call("search", pattern=f"x{n}") for n in range(10)], max_steps=3)
    assert isinstance(run.stop, StepLimit) and not run.finished
    assert run.stop.reason == "step limit reached: 3 of 3 steps without finish"
    assert run.seen == [("t-1", 2), ("t-1", 3)] and run.spans == [] and run.analysis == ""


def test_time_limit_stops_the_loop(tmp_path):
    def slow(argv, stdin):
        time.sleep(0.2)
        return "ok"

    with get_sandbox("fake", tmp_path, handler=slow) as slow_box:
        run = run_loop(slow_box, [call("search", pattern=f"x{n}") for n in range(20)], max_seconds=0.5)
    assert isinstance(run.stop, TimeLimit) and run.stop.reason.startswith("time limit reached: ")
    assert 2 <= run.steps <= 4


def test_token_and_cost_limits_count_the_reported_usage(box):
    used = Message("assistant", tool_calls=[], usage={"input_tokens": 600, "output_tokens": 100})
    run = run_loop(box, [used, used, used], max_tokens=1000)
    assert isinstance(run.stop, TokenLimit) and run.steps == 2
    assert run.stop.reason == "token limit reached: 1,400 of 1,000 tokens without finish"
    run = run_loop(box, [used, used, used], max_cost=0.01, price=(10.0, 20.0))
    assert isinstance(run.stop, CostLimit) and run.steps == 2 and run.cost == pytest.approx(0.016)


def test_the_third_identical_call_is_caught_and_the_policy_told(box):
    script = [call("search", pattern="x")] * 3 + [finish("done", [])]
    policy = ScriptedPolicy(script)
    run = AgentLoop(policy, ToolBox(box)).run("system", Message("user", "Question: q"))
    assert run.finished and len(box.calls) == 2  # the third was not run
    told = policy.seen[-1][-1].tool_result
    assert told.error.startswith("this exact search call was already made 2 times")


def test_a_policy_that_keeps_repeating_a_refused_call_is_stopped_as_stuck(box):
    script = [call("search", pattern="x")] * 2 + [call("search", pattern="x")] * 3 + [finish("never", [])]
    run = run_loop(box, script, stuck_turns=3)
    assert isinstance(run.stop, Stuck) and run.steps == 5 and len(box.calls) == 2
    assert run.stop.reason.startswith("stuck: 3 turns in a row repeated calls")
    assert run.seen  # what the two real searches showed is still returned


def test_a_new_call_between_refused_repeats_resets_the_count(box):
    script = [call("search", pattern="x")] * 4 + [call("search", pattern="y")] + [call("search", pattern="x")] * 2
    run = run_loop(box, script + [finish("done", [])], stuck_turns=3)
    assert run.finished


def test_a_model_request_cut_off_by_the_deadline_is_a_time_limit(box):
    class SlowPolicy:
        name, deadline = "slow", None

        def next(self, messages, tools):
            time.sleep(max(0.0, self.deadline - time.monotonic()))
            raise TimeoutError("Request timed out.")

    run = AgentLoop(SlowPolicy(), ToolBox(box), Limits(max_seconds=1.5)).run("system", Message("user", "Question: q"))
    assert isinstance(run.stop, TimeLimit) and "the last model request was cut off: TimeoutError" in run.stop.reason


def test_plain_text_gets_a_nudge(box):
    policy = ScriptedPolicy([text("let me think"), finish("done", [])])
    AgentLoop(policy, ToolBox(box)).run("system", Message("user", "Question: q"))
    assert policy.seen[1][-1].role == "user" and policy.seen[1][-1].text == NUDGE


def test_output_is_trimmed_for_the_policy_and_whole_in_the_transcript(tmp_path):
    long_output = "\n".join(f"line {n} of a long page" for n in range(2000))
    with get_sandbox("fake", tmp_path, handler=lambda argv, stdin: long_output) as long_box:
        policy = ScriptedPolicy([call("python", code="print(1)"), finish("done", [])])
        loop = AgentLoop(
            policy, ToolBox(long_box), Limits(output_tokens=200), transcript=TranscriptWriter(tmp_path / "t.jsonl")
        )
        loop.run("system", Message("user", "Question: q"))
        loop.transcript.close()
    shown = policy.seen[1][-1].tool_result
    assert shown.output.startswith("line 0 of a long page")
    assert shown.output.rstrip().endswith("line 1999 of a long page")
    assert f"[… {shown.elided_tokens} tokens elided …]" in shown.output and shown.elided_tokens > 10_000
    assert shown.full_output == long_output
    tool = next(r for r in read_transcript(tmp_path / "t.jsonl") if r["type"] == "tool")
    assert tool["output"] == long_output and tool["elided_tokens"] == shown.elided_tokens


def test_a_failing_policy_stops_the_loop_but_a_config_error_propagates(box):
    class Broken:
        name = "broken"

        def __init__(self, exc):
            self.exc = exc

        def next(self, messages, tools):
            raise self.exc

    run = AgentLoop(Broken(RuntimeError("HTTP 500 five times")), ToolBox(box)).run("s", Message("user", "q"))
    assert isinstance(run.stop, PolicyFailed)
    assert run.stop.reason == "the broken policy failed: RuntimeError: HTTP 500 five times"
    with pytest.raises(ConfigError, match="bad key"):
        AgentLoop(Broken(ConfigError("bad key")), ToolBox(box)).run("s", Message("user", "q"))


def test_transcript_records_every_call_and_replays(box, tmp_path):
    run_loop(box, [call("search", pattern="x"), text("hmm"), finish("x is there", [("t-1", 2, 3)])], tmp_path)
    records = read_transcript(tmp_path / "t.jsonl")
    assert [r["type"] for r in records] == [
        "start",
        "assistant",
        "tool",
        "assistant",
        "nudge",
        "assistant",
        "tool",
        "stop",
    ]
    start, stop = records[0], records[-1]
    assert start["question"] == "where is x?" and start["limits"]["max_steps"] == 30
    assert records[2]["arguments"] == {"pattern": "x"} and records[2]["output"] == SEARCH_OUTPUT
    assert all(r["t"] >= 0 for r in records) and "seconds" in records[1]
    assert stop["kind"] == "finished" and stop["steps"] == 3 and stop["spans"][0]["end_state_index"] == 3
    replay = "\n".join(render_replay(records))
    assert "question: where is x?" in replay and 'call search({"pattern": "x"})' in replay
    assert "stop (finished): finish called with 1 span(s)" in replay and "span t-1 2-3" in replay


def test_a_torn_last_line_is_skipped(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"type": "start", "t": 0}\n{"type": "assis')
    assert read_transcript(path) == [{"type": "start", "t": 0}]
