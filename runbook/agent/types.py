"""The provider-neutral message and tool model that the loop, the policies and the transcript share."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


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
class Task:
    """What a query gives its policy as structured input (model policies read the rendered user message instead)."""

    question: str
    image: str | None = None
    """Path of the question's image, if any."""
    recall: list[dict] = field(default_factory=list)
    """Method R's ranked hits for the question (rbcore.recall dicts, with `id`, `pool`, `t`, `i`, ...): first the
    ones R's own context would hold (marked `packed`), in R's order, then the rest of what it ranked."""
    term_shares: dict[str, float] = field(default_factory=dict)
    """{word of the question: share of the stored states that have it} (from R's index): what a full scan for
    the word would cost, and how little finding it says."""


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
    """What a tool call gave back. `output` is what the policy sees (trimmed); `full_output` is kept for the transcript."""

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
    """More content after `text`, in order: LongMemEval-V2 items {"type": "text"|"image", "value": text or image path}."""


@dataclass(frozen=True, slots=True)
class Span:
    """Consecutive states of one trajectory that the agent hands back as evidence (indices inclusive)."""

    trajectory_id: str
    start_state_index: int
    end_state_index: int

    @property
    def size(self) -> int:
        return self.end_state_index - self.start_state_index + 1

    def to_json(self) -> dict[str, Any]:
        return {"trajectory_id": self.trajectory_id, "start_state_index": self.start_state_index,
                "end_state_index": self.end_state_index}


class Policy(Protocol):
    """Picks the next step: an assistant Message with tool calls (or plain text, which the loop answers with a nudge).

    A policy may also define `begin(task: Task)`: the loop calls it once, before the first `next`, with the query's
    structured inputs (the offline planner works from those, not from the prompt's text), and `output_view_tokens`:
    how much of one tool output it reads, when more than the loop's limit (a policy with no context window to spare,
    reading its own programs' output)."""

    name: str

    def next(self, messages: list[Message], tools: list[ToolSpec]) -> Message:
        ...
