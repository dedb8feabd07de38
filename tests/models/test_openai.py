"""The openai policy through the real openai SDK against the fake OpenAI-compatible server on loopback."""

from __future__ import annotations

import pytest

from runbook.agent.tools import TOOL_SPECS
from runbook.errors import ConfigError
from runbook.models.client import WaitPolicy
from runbook.models.fakes import FakeOpenAIServer, Reply, call, fail, raw_call, text
from runbook.models.messages import Message, ToolCall, ToolResult
from runbook.models.openai import OpenAIModel, calls_from_text, to_openai

FAST = WaitPolicy(base=0.01, cap=0.05)
CONVERSATION = [
    Message("system", "you gather evidence"),
    Message("user", "Question: where?"),
    Message("assistant", "looking", [ToolCall("call_a", "search", {"pattern": "x"})]),
    Message("tool", tool_result=ToolResult("call_a", "search", "t-1 state 2 @ ...")),
]


def policy(server, **options):
    return OpenAIModel("fake-model", api_key="test-key", base_url=server.base_url, wait=FAST, **options)


def test_messages_and_tools_are_sent_in_openai_shape():
    with FakeOpenAIServer([call("show", trajectory_id="t-1", states="2")], api_key="test-key") as server:
        reply = policy(server).next(CONVERSATION, TOOL_SPECS)
    request = server.requests[0]
    assert request["model"] == "fake-model" and request["max_tokens"] == 4096
    assert [m["role"] for m in request["messages"]] == ["system", "user", "assistant", "tool"]
    assistant, tool = request["messages"][2], request["messages"][3]
    assert assistant["tool_calls"] == [
        {"id": "call_a", "type": "function", "function": {"name": "search", "arguments": '{"pattern": "x"}'}}
    ]
    assert tool == {"role": "tool", "tool_call_id": "call_a", "content": "t-1 state 2 @ ..."}
    assert [t["function"]["name"] for t in request["tools"]] == ["recall", "search", "show", "read", "python", "finish"]
    assert request["tool_choice"] == "auto"
    assert request["tools"][0]["function"]["parameters"] == TOOL_SPECS[0].parameters
    assert reply.role == "assistant" and reply.tool_calls[0].name == "show"
    assert reply.tool_calls[0].arguments == {"trajectory_id": "t-1", "states": "2"}
    assert reply.usage["input_tokens"] > 0 and reply.usage["output_tokens"] > 0


@pytest.mark.parametrize("status", [429, 500, 503])
def test_rate_limits_and_server_errors_are_retried(status):
    with FakeOpenAIServer([fail(status), fail(status), call("search", pattern="x")]) as server:
        reply = policy(server).next(CONVERSATION, TOOL_SPECS)
    assert reply.tool_calls[0].name == "search" and len(server.requests) == 3


def test_retries_give_up_after_the_attempts():
    with FakeOpenAIServer([fail(500)] * 5) as server:
        with pytest.raises(Exception, match="500"):
            policy(server, attempts=3).next(CONVERSATION, TOOL_SPECS)
    assert len(server.requests) == 3


def test_a_timeout_is_retried():
    with FakeOpenAIServer([Reply(text="late", delay=1.0), text("on time")]) as server:
        reply = policy(server, timeout=0.3).next(CONVERSATION, TOOL_SPECS)
    assert reply.text == "on time" and len(server.requests) == 2


def test_a_bad_key_is_a_config_error_that_names_the_variable():
    with FakeOpenAIServer([], api_key="right") as server:
        with pytest.raises(ConfigError, match="rejected the API key .* set a valid key in OPENAI_API_KEY"):
            policy(server).next(CONVERSATION, TOOL_SPECS)
    assert len(server.requests) == 1  # not retried


def test_an_unknown_model_is_a_config_error_that_says_what_to_set():
    with FakeOpenAIServer([], models=["qwen"]) as server:
        with pytest.raises(ConfigError, match="has no model 'fake-model' .* set RUNBOOK_MODEL"):
            policy(server).next(CONVERSATION, TOOL_SPECS)


def test_broken_json_arguments_become_a_call_error():
    with FakeOpenAIServer([raw_call("show", '{"trajectory_id": "t-1",')]) as server:
        reply = policy(server).next(CONVERSATION, TOOL_SPECS)
    (bad,) = reply.tool_calls
    assert bad.name == "show" and bad.arguments == {} and bad.error.startswith("not valid JSON")


def test_no_key_and_no_base_url_is_a_config_error():
    with pytest.raises(ConfigError, match="needs OPENAI_API_KEY, or OPENAI_BASE_URL"):
        OpenAIModel("gpt-4.1-mini")


def test_a_local_server_needs_no_key():
    with FakeOpenAIServer([text("hi")]) as server:
        assert OpenAIModel("local", base_url=server.base_url).next(CONVERSATION, []).text == "hi"
    assert server.headers[0]["authorization"] == "Bearer not-needed"
    assert "tools" not in server.requests[0]


def test_tool_calls_written_as_text_are_understood():
    fenced = 'I will search.\n```json\n{"name": "search", "arguments": {"pattern": "Grand Total"}}\n```'
    assert calls_from_text(fenced, {"search"})[0].arguments == {"pattern": "Grand Total"}
    bare = '{"name": "show", "parameters": "{\\"trajectory_id\\": \\"t-1\\"}"}'
    assert calls_from_text(bare, {"show"})[0].arguments == {"trajectory_id": "t-1"}
    assert calls_from_text('{"name": "rm", "arguments": {}}', {"show"}) == []
    tagged = 'Let me look.\n<tool_call>\n{"name": "search", "arguments": {"pattern": "Bestsellers"}}\n</tool_call>'
    assert calls_from_text(tagged, {"search"})[0].arguments == {"pattern": "Bestsellers"}
    python_literal = '```json\n{"name": "search", "arguments": {"pattern": r"Total: (\\d+)", "count": true}}\n```'
    assert calls_from_text(python_literal, {"search"})[0].arguments == {"pattern": "Total: (\\d+)", "count": True}
    (broken,) = calls_from_text('```json\n{"name": "show", "arguments": {"states": 3-}}\n```', {"show"})
    assert broken.name == "show" and broken.arguments == {} and "not valid JSON" in broken.error
    functions_form = 'functions.show:\n{"trajectory_id": "t-1", "states": "2"}\nfunctions.search:\n{"pattern": "x"}'
    assert [(c.name, c.arguments) for c in calls_from_text(functions_form, {"show", "search"})] == [
        ("show", {"trajectory_id": "t-1", "states": "2"}),
        ("search", {"pattern": "x"}),
    ]
    nested = '```json\n{"function": {"name": "search", "arguments": {"pattern": "Cancel"}}}\n```'
    assert [(c.name, c.arguments) for c in calls_from_text(nested, {"search"})] == [("search", {"pattern": "Cancel"})]
    schemas = {t.name: t.parameters for t in TOOL_SPECS}
    only_arguments = '```json\n{"analysis": "none found", "spans": []}\n```'
    assert [(c.name, c.arguments) for c in calls_from_text(only_arguments, schemas)] == [
        ("finish", {"analysis": "none found", "spans": []})
    ]
    assert calls_from_text('{"pattern": "x", "colour": "red"}', schemas) == []  # fits no tool: not a call
    twice = (
        only_arguments + '\n```json\n{"name": "finish", "arguments": "{\\"analysis\\": \\"none found\\", '
        '\\"spans\\": []}"}\n```'
    )
    assert len(calls_from_text(twice, schemas)) == 1  # one call written in two forms is one call
    (bare_name,) = calls_from_text("functions.search:", {"search"})
    assert bare_name.error == "the call has no arguments object"
    with FakeOpenAIServer([text(fenced)]) as server:
        reply = policy(server).next(CONVERSATION, TOOL_SPECS)
    assert reply.tool_calls[0].name == "search"


def test_without_a_model_name_a_compatible_server_is_asked_for_its_model():
    with FakeOpenAIServer([text("hi")], models=["qwen2.5-coder"]) as server:
        local = OpenAIModel(base_url=server.base_url)
        assert local.model == "qwen2.5-coder" and local.next(CONVERSATION, []).text == "hi"
    assert server.requests[0]["model"] == "qwen2.5-coder"


def test_the_query_deadline_bounds_a_slow_request_and_its_retries():
    import time

    script = [call("search", pattern="x")]
    for reply in script:
        reply.delay = 3.0
    with FakeOpenAIServer(script * 4, api_key="test-key") as server:
        agent = policy(server, timeout=60.0)
        agent.deadline = time.monotonic() + 1.0
        started = time.monotonic()
        with pytest.raises(Exception):  # noqa: B017  (whatever the SDK raises on a timeout: the point is when)
            agent.next(CONVERSATION, TOOL_SPECS)
    assert time.monotonic() - started < 2.9, "the request should be cut at the deadline, with no retry after it"


def test_the_reply_tokens_setting_caps_each_turn(monkeypatch):
    from runbook.config import load_settings

    monkeypatch.setenv("RUNBOOK_REPLY_TOKENS", "512")
    with FakeOpenAIServer([text("ok")]) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        OpenAIModel.from_settings(load_settings(), model="fake-model", wait=FAST).next(CONVERSATION, [])
    assert server.requests[0]["max_tokens"] == 512


def test_tool_results_can_travel_as_user_messages_for_templates_that_drop_tool_messages(monkeypatch):
    from runbook.config import load_settings

    turns = CONVERSATION + [Message("tool", tool_result=ToolResult("call_b", "show", "state 3 text"))]
    monkeypatch.setenv("RUNBOOK_TOOL_RESULTS", "user")
    with FakeOpenAIServer([text("ok")]) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        OpenAIModel.from_settings(load_settings(), model="fake-model", wait=FAST).next(turns, TOOL_SPECS)
    sent = server.requests[0]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
    assert sent[3] == {
        "role": "user",
        "content": "Output of search (call_a):\nt-1 state 2 @ ...\n\nOutput of show (call_b):\nstate 3 text",
    }
    with pytest.raises(ConfigError, match="tool_results must be one of tool, user"):
        OpenAIModel("m", base_url=server.base_url, tool_results="system")


def test_a_compatible_server_gets_empty_content_beside_tool_calls_instead_of_null():
    turn = [Message("assistant", "", [ToolCall("call_a", "search", {"pattern": "x"})])]
    assert to_openai(turn)[0]["content"] is None  # what OpenAI documents
    assert to_openai(turn, null_content=False)[0]["content"] == ""  # llama-cpp-python's server refuses null
    with FakeOpenAIServer([text("ok")]) as server:
        policy(server).next([Message("system", "s"), Message("user", "q")] + turn, TOOL_SPECS)
    assert server.requests[0]["messages"][2]["content"] == ""


def test_a_tool_named_without_arguments_is_asked_for_again_with_that_tool_chosen():
    with FakeOpenAIServer([text("functions.search:"), call("search", pattern="Bestsellers")]) as server:
        reply = policy(server).next(CONVERSATION, TOOL_SPECS)
    assert [(c.name, c.arguments, c.error) for c in reply.tool_calls] == [("search", {"pattern": "Bestsellers"}, None)]
    assert [r["tool_choice"] for r in server.requests] == ["auto", {"type": "function", "function": {"name": "search"}}]
    with FakeOpenAIServer([call("search", pattern="Bestsellers")]) as server:
        single = policy(server).next(CONVERSATION, TOOL_SPECS)
    assert reply.usage["output_tokens"] > single.usage["output_tokens"]  # both requests are counted
