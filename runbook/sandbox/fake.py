"""FakeSandbox: answers tool calls from a handler instead of running them, so agent tests need no engine
(in the spirit of httpx.MockTransport)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from .base import ExecResult, SandboxBase, SandboxLimits

Reply = ExecResult | str | tuple
Handler = Callable[[list[str], "str | None"], Reply]


class FakeSandbox(SandboxBase):
    """Records every call; the handler's reply may be an ExecResult, an output string (exit 0) or (exit, output)."""

    name = "fake"

    def __init__(self, store_path: str | Path, limits: SandboxLimits | None = None, *, handler: Handler | None = None):
        super().__init__(store_path, limits)
        self.handler = handler or (lambda argv, stdin: "")
        self.calls: list[list[str]] = []

    def check_store(self) -> None:
        pass  # fakes serve tests that may not have a store on disk

    def _start(self) -> None:
        pass

    def _stop(self) -> None:
        pass

    def _exec(self, argv: list[str], *, timeout: float, stdin: str | None) -> ExecResult:
        self.calls.append(argv)
        reply = self.handler(argv, stdin)
        if isinstance(reply, ExecResult):
            return reply
        exit_code, output = (0, reply) if isinstance(reply, str) else reply
        return ExecResult(exit_code=exit_code, output=output, truncated=False, timed_out=False, seconds=0.0)
