"""ScriptedPolicy: a policy that replays prepared replies, for tests (the real loop runs; no HTTP)."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from ..models.fakes import Reply
from ..models.messages import Message, ToolCall, ToolSpec


class ScriptedPolicy:
    """A Policy replaying Replies (or ready Messages) with no HTTP; `seen` keeps what it was shown."""

    name = "scripted"

    def __init__(self, script: Iterable[Reply | Message], *, repeat_last: bool = False):
        self.script = deque(script)
        self.repeat_last = repeat_last
        self.seen: list[list[Message]] = []
        self._last: Reply | Message | None = None
        self._n = 0

    def next(self, messages: list[Message], tools: list[ToolSpec]) -> Message:
        self.seen.append(list(messages))
        if self.script:
            self._last = self.script.popleft()
        elif not self.repeat_last or self._last is None:
            raise RuntimeError(f"the scripted policy ran out after {self._n} replies")
        self._n += 1
        item = self._last
        if isinstance(item, Message):
            return item
        if item.status != 200:
            raise RuntimeError(f"scripted error {item.status}: {item.error}")
        tool_calls = []
        for i, (name, args) in enumerate(item.calls):
            if isinstance(args, str):
                tool_calls.append(ToolCall(f"scripted_{self._n}_{i}", name, {}, error=f"raw arguments {args!r}"))
            else:
                tool_calls.append(ToolCall(f"scripted_{self._n}_{i}", name, dict(args)))
        return Message("assistant", item.text, tool_calls, usage={"input_tokens": 0, "output_tokens": 0})
