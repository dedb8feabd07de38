"""The agent loop: ask the policy for tool calls, run them in the sandbox, feed trimmed output back, until a stop.

Stops are exceptions carrying their reason (runbook.agent.exceptions): `finish`, a step/time/token/cost limit, or a
policy that keeps failing, or one that keeps repeating itself. Identical calls are counted: from the third one on
the call is not run and the policy is told to change course; turns made only of such refused calls end the loop. Output
sent back to the policy is trimmed head-and-tail by tokens with the elided amount
stated; the transcript keeps it whole.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from ..budget import head_and_tail
from ..config import Limits
from ..errors import ConfigError
from ..models.messages import Message, ToolCall, ToolResult
from .exceptions import AgentStop, CostLimit, Finished, PolicyFailed, StepLimit, Stuck, TimeLimit, TokenLimit
from .tools import ToolBox
from .transcript import TranscriptWriter
from .types import Policy, Span, Task

NUDGE = (
    "Reply with a tool call. Use recall, search, show, read or python to look at the memory; when you have "
    "the evidence, call finish(analysis, spans, recall)."
)

REFUSED_REPEAT = -2
"""exit_code of a repeated call the loop refused to run (no real process exits with a negative code)."""


@dataclass
class AgentRun:
    """What one loop produced: the stop, the counters, and what the agent saw on the way."""

    stop: AgentStop
    steps: int
    seconds: float
    tokens: dict[str, int]
    cost: float | None
    seen: list[tuple[str, int]]
    """(trajectory id or folder, state index) the agent looked at, most looked-at first."""
    messages: list[Message] = field(repr=False, default_factory=list)

    @property
    def finished(self) -> bool:
        return isinstance(self.stop, Finished)

    @property
    def analysis(self) -> str:
        return self.stop.analysis if isinstance(self.stop, Finished) else ""

    @property
    def spans(self) -> list[Span]:
        return self.stop.spans if isinstance(self.stop, Finished) else []

    @property
    def recall(self) -> list[str]:
        """Ids of recall hits the agent kept (n12, e34, s56), most important first."""
        return self.stop.recall if isinstance(self.stop, Finished) else []


class AgentLoop:
    """Runs one policy against one ToolBox under Limits, writing a transcript."""

    def __init__(
        self,
        policy: Policy,
        toolbox: ToolBox,
        limits: Limits | None = None,
        *,
        transcript: TranscriptWriter | None = None,
        price: tuple[float, float] | None = None,
        model: str | None = None,
    ):
        self.policy = policy
        self.toolbox = toolbox
        self.limits = limits or Limits()
        self.view_tokens = max(self.limits.output_tokens, int(getattr(policy, "output_view_tokens", 0) or 0))
        """Tokens of one tool output the policy sees."""
        self.transcript = transcript
        self.price = price
        """US dollars per million (input, output) tokens, when known."""
        self.model = model
        self.steps = 0
        self.tokens: Counter[str] = Counter()
        self.calls: Counter[str] = Counter()
        self.refused_turns = 0
        """Turns in a row whose every call was a refused repeat."""
        self._t0 = 0.0

    def run(self, system: str, user: Message, task: Task | None = None) -> AgentRun:
        """Loop until a stop; a ConfigError from the policy (bad key, unknown model) propagates. `task` is the
        query's structured input, handed to a policy that takes it (`begin`)."""
        self._t0 = time.monotonic()
        messages = [Message("system", system), user]
        self._record(
            "start",
            question=task.question if task else user.text,
            policy=self.policy.name,
            model=self.model,
            limits=asdict(self.limits),
            system=system,
            parts=user.parts,
        )
        try:
            begin = getattr(self.policy, "begin", None)
            if begin is not None and task is not None:
                begin(task)
            while True:
                self.step(messages)
        except AgentStop as stop:
            run = AgentRun(
                stop,
                self.steps,
                time.monotonic() - self._t0,
                dict(self.tokens),
                self.cost,
                self.toolbox.seen.ranked(),
                messages,
            )
            self._record(
                "stop",
                kind=stop.kind,
                reason=stop.reason,
                steps=run.steps,
                seconds=round(run.seconds, 3),
                tokens=run.tokens,
                cost=run.cost,
                analysis=run.analysis,
                spans=[s.to_json() for s in run.spans],
                recall=run.recall,
            )
            return run

    def step(self, messages: list[Message]) -> None:
        """One policy turn and the calls it asks for."""
        self._check_steps_and_time()
        reply = self._ask(messages)
        messages.append(reply)
        if not reply.tool_calls:
            messages.append(Message("user", NUDGE))
            self._record("nudge", text=NUDGE)
        refused = 0
        for call in reply.tool_calls:
            result = self._run_call(call)
            refused += result.exit_code == REFUSED_REPEAT
            messages.append(Message("tool", tool_result=result))
        self.refused_turns = self.refused_turns + 1 if reply.tool_calls and refused == len(reply.tool_calls) else 0
        if self.refused_turns >= self.limits.stuck_turns:
            raise Stuck(
                f"stuck: {self.refused_turns} turns in a row repeated calls that were already made "
                f"{self.limits.repeat_limit - 1} times"
            )
        self._check_tokens_and_cost()

    @property
    def cost(self) -> float | None:
        if not self.price:
            return None
        return round(
            (self.tokens["input_tokens"] * self.price[0] + self.tokens["output_tokens"] * self.price[1]) / 1e6, 6
        )

    def _ask(self, messages: list[Message]) -> Message:
        started = time.monotonic()
        if hasattr(self.policy, "deadline"):  # a model policy bounds its requests and retries by the query's time
            self.policy.deadline = started + max(1.0, self._seconds_left())
        try:
            reply = self.policy.next(messages, self.toolbox.specs)
        except ConfigError:
            raise
        except AgentStop:
            raise
        except Exception as exc:  # the policy already retried what can be retried: stop, keep the evidence
            if self._seconds_left() <= 1.0:  # the request was cut off by the query's own deadline
                raise TimeLimit(
                    f"time limit reached: {time.monotonic() - self._t0:.1f} s of "
                    f"{self.limits.max_seconds:g} s without finish (the last model request was cut "
                    f"off: {type(exc).__name__})"
                ) from exc
            raise PolicyFailed(f"the {self.policy.name} policy failed: {type(exc).__name__}: {exc}") from exc
        self.steps += 1
        for key in ("input_tokens", "output_tokens", "cached_tokens"):
            self.tokens[key] += int(reply.usage.get(key, 0) or 0)
        self._record(
            "assistant",
            step=self.steps,
            seconds=round(time.monotonic() - started, 4),
            text=reply.text,
            tool_calls=[_call_json(c) for c in reply.tool_calls],
            usage=reply.usage,
        )
        return reply

    def _run_call(self, call: ToolCall) -> ToolResult:
        key = call.name + json.dumps(call.arguments, sort_keys=True, default=str)
        self.calls[key] += 1
        if self.calls[key] >= self.limits.repeat_limit:
            message = (
                f"this exact {call.name} call was already made {self.calls[key] - 1} times and its output "
                f"will not change: use the output you have, change the arguments, or call finish"
            )
            result = ToolResult(call.id, call.name, f"error: {message}", exit_code=REFUSED_REPEAT, error=message)
        else:
            try:
                result = self.toolbox.run(call, timeout=max(1.0, self._seconds_left()))
            except Finished:
                self._record(
                    "tool",
                    step=self.steps,
                    call_id=call.id,
                    name=call.name,
                    arguments=call.arguments,
                    output="finished",
                    exit_code=0,
                    seconds=0.0,
                )
                raise
        full = result.output
        result.full_output = full
        result.output, result.elided_tokens = head_and_tail(full, self.view_tokens)
        self._record(
            "tool",
            step=self.steps,
            call_id=call.id,
            name=call.name,
            arguments=call.arguments,
            output=full,
            shown_tokens_limit=self.view_tokens,
            elided_tokens=result.elided_tokens,
            exit_code=result.exit_code,
            seconds=result.seconds,
            error=result.error,
        )
        return result

    def _seconds_left(self) -> float:
        return self.limits.max_seconds - (time.monotonic() - self._t0)

    def _check_steps_and_time(self) -> None:
        if self.steps >= self.limits.max_steps:
            raise StepLimit(f"step limit reached: {self.steps} of {self.limits.max_steps} steps without finish")
        if self._seconds_left() <= 0:
            raise TimeLimit(
                f"time limit reached: {time.monotonic() - self._t0:.1f} s of "
                f"{self.limits.max_seconds:g} s without finish"
            )

    def _check_tokens_and_cost(self) -> None:
        used = self.tokens["input_tokens"] + self.tokens["output_tokens"]
        if used >= self.limits.max_tokens:
            raise TokenLimit(f"token limit reached: {used:,} of {self.limits.max_tokens:,} tokens without finish")
        cost = self.cost
        if cost is not None and self.limits.max_cost is not None and cost >= self.limits.max_cost:
            raise CostLimit(f"cost limit reached: ${cost:.4f} of ${self.limits.max_cost:.4f} without finish")

    def _record(self, type_: str, **fields: Any) -> None:
        if self.transcript is not None:
            self.transcript.record(type_, **fields)


def _call_json(call: ToolCall) -> dict[str, Any]:
    out = {"id": call.id, "name": call.name, "arguments": call.arguments}
    if call.error:
        out["error"] = call.error
    return out
