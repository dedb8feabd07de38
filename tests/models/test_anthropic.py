"""The anthropic policy through the real anthropic SDK against the fake Anthropic server on loopback."""

from __future__ import annotations

import pytest

from runbook.agent.tools import TOOL_SPECS
from runbook.errors import ConfigError
from runbook.models.anthropic import AnthropicModel
from runbook.models.client import WaitPolicy
from runbook.models.fakes import FakeAnthropicServer, call, calls, fail, raw_call, text
from runbook.models.messages import Message, ToolCall, ToolResult

FAST = WaitPolicy(base=0.01, cap=0.05)
CALLS = [ToolCall("toolu_a", "search", {"pattern": "x"}), ToolCall("toolu_b", "show", {"trajectory_id": "t-1"})]
CONVERSATION = [
    Message("system", "you gather evidence"),
    Message("user", "Question: where?"),
    Message("assistant", "two looks", CALLS),
    Message("tool", tool_result=ToolResult("toolu_a", "search", "t-1 state 2 @ ...")),
    Message("tool", tool_result=ToolResult("toolu_b", "show", "error: no such state", error="no such state")),
    Message("user", "Reply with a tool call."),
]


def policy(server, **options):
    return AnthropicModel("claude-test", api_key="test-key", base_url=server.base_url, wait=FAST, **options)


def test_messages_are_sent_in_anthropic_shape_with_cache_breakpoints():
    with FakeAnthropicServer([call("finish", analysis="a", spans=[])], api_key="test-key") as server:
        reply = policy(server).next(CONVERSATION, TOOL_SPECS)
    request = server.requests[0]
    assert request["model"] == "claude-test" and request["max_tokens"] == 4096
    assert request["system"] == [
        {"type": "text", "text": "you gather evidence", "cache_control": {"type": "ephemeral"}}
    ]
    assert [m["role"] for m in request["messages"]] == ["user", "assistant", "user"]
    assistant, results = request["messages"][1], request["messages"][2]
    assert assistant["content"] == [
        {"type": "text", "text": "two looks"},
        {"type": "tool_use", "id": "toolu_a", "name": "search", "input": {"pattern": "x"}},
        {"type": "tool_use", "id": "toolu_b", "name": "show", "input": {"trajectory_id": "t-1"}},
    ]
    # both results and the nudge ride in one user turn; the moving breakpoint sits on its last block
    assert results["content"][0] == {"type": "tool_result", "tool_use_id": "toolu_a", "content": "t-1 state 2 @ ..."}
    assert results["content"][1]["is_error"] is True
    assert results["content"][2] == {
        "type": "text",
        "text": "Reply with a tool call.",
        "cache_control": {"type": "ephemeral"},
    }
    assert sum("cache_control" in b for m in request["messages"] for b in m["content"]) == 1
    assert request["tools"][0] == {
        "name": TOOL_SPECS[0].name,
        "description": TOOL_SPECS[0].description,
        "input_schema": TOOL_SPECS[0].parameters,
    }
    assert reply.tool_calls[0].name == "finish" and reply.tool_calls[0].arguments == {"analysis": "a", "spans": []}


def test_cached_tokens_are_reported_once_the_system_prompt_repeats():
    with FakeAnthropicServer([text("one"), text("two")]) as server:
        first = policy(server).next(CONVERSATION, [])
        second = policy(server).next(CONVERSATION + [Message("assistant", "one")], [])
    assert first.usage["cached_tokens"] == 0 and second.usage["cached_tokens"] > 0
    assert second.usage["input_tokens"] >= second.usage["cached_tokens"]


@pytest.mark.parametrize("status", [429, 500, 529])
def test_rate_limits_overload_and_server_errors_are_retried(status):
    two_calls = calls(("search", {"pattern": "a"}), ("search", {"pattern": "b"}))
    with FakeAnthropicServer([fail(status), two_calls]) as server:
        reply = policy(server).next(CONVERSATION, TOOL_SPECS)
    assert [c.arguments["pattern"] for c in reply.tool_calls] == ["a", "b"] and len(server.requests) == 2


def test_a_bad_key_and_an_unknown_model_are_config_errors():
    with FakeAnthropicServer([], api_key="right") as server:
        with pytest.raises(ConfigError, match="rejected the API key .* ANTHROPIC_API_KEY"):
            policy(server).next(CONVERSATION, TOOL_SPECS)
    with FakeAnthropicServer([], models=["claude-real"]) as server:
        with pytest.raises(ConfigError, match="has no model 'claude-test'"):
            policy(server).next(CONVERSATION, TOOL_SPECS)


def test_a_tool_input_that_is_not_an_object_becomes_a_call_error():
    with FakeAnthropicServer([raw_call("show", "t-1, state 2")]) as server:
        reply = policy(server).next(CONVERSATION, TOOL_SPECS)
    assert reply.tool_calls[0].error == "input is str, not an object"


def test_no_key_is_a_config_error():
    with pytest.raises(ConfigError, match="needs an API key: set ANTHROPIC_API_KEY"):
        AnthropicModel("claude-test")


def test_images_travel_as_base64_blocks(tmp_path):
    image = tmp_path / "q.jpg"
    image.write_bytes(b"\xff\xd8\xff\xe0fake-jpeg")
    message = Message("user", "Question: which page?", parts=[{"type": "image", "value": str(image)}])
    with FakeAnthropicServer([text("ok")]) as server:
        policy(server).next([Message("system", "s"), message], [])
    (turn,) = server.requests[0]["messages"]
    assert turn["content"][0] == {"type": "text", "text": "Question: which page?"}
    assert turn["content"][1]["source"] == {
        "type": "base64",
        "media_type": "image/jpeg",
        "data": "/9j/4GZha2UtanBlZw==",
    }


def test_the_reply_tokens_setting_caps_each_turn(monkeypatch):
    from runbook.config import load_settings

    monkeypatch.setenv("RUNBOOK_REPLY_TOKENS", "300")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    with FakeAnthropicServer([text("ok")]) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        AnthropicModel.from_settings(load_settings(), model="claude-test", wait=FAST).next(CONVERSATION, [])
    assert server.requests[0]["max_tokens"] == 300
