"""The provider-neutral message and tool model: what the agent loop, the policies, the transcript, the reader and
every provider client share (each provider only translates it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class ToolSpec:
    """A tool the policy may call: rendered as Anthropic `tools` or OpenAI `tools` by each provider."""

    name: str
    description: str
    parameters: dict[str, Any]
    """JSON Schema of the arguments object."""
    command: Any = None
    """runbook.agent.specs.Command: the sandbox program a call runs (None: the toolbox builds it, or none runs)."""


@dataclass(slots=True)
class ToolCall:
    """One call the policy asked for."""

    id: str
    name: str
    arguments: dict[str, Any]
    error: str | None = None
    """Set by a policy when the model's call could not be parsed (bad JSON): the loop reports it back, runs nothing."""


@dataclass(slots=True)
class ToolResult:
    """What a tool call gave back. `output` is what the policy sees (trimmed); `full_output` is kept for the
    transcript."""

    call_id: str
    name: str
    output: str
    exit_code: int = 0
    seconds: float = 0.0
    elided_tokens: int = 0
    full_output: str | None = None
    error: str | None = None
    """Set when the call itself was malformed or failed to run (the policy is told)."""


@dataclass(slots=True)
class Message:
    """One turn: system/user text, an assistant turn with tool calls, or a tool result."""

    role: str
    """'system', 'user', 'assistant' or 'tool'."""
    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_result: ToolResult | None = None
    usage: dict[str, int] = field(default_factory=dict)
    """Token usage reported by the provider for an assistant turn: input_tokens, output_tokens, cached_tokens."""
    parts: list[dict[str, str]] = field(default_factory=list)
    """More content after `text`, in order: LongMemEval-V2 items {"type": "text"|"image", "value": text or image
    path}."""
