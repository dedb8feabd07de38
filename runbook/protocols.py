"""The three protocols the layers meet at: a Memory (what a method is), a Policy (what picks the agent's next
call) and a Sandbox (where the agent's calls run). The types they name are imported for the type checker only, so
this module sits at the bottom of the layers and every layer can implement or use them."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from .context import Context
    from .models.messages import Message, ToolSpec
    from .sandbox.base import ExecResult, SandboxLimits
    from .trajectory.model import Trajectory


@runtime_checkable
class Memory(Protocol):
    """A long-term memory over one store.

    `concurrent_queries` (optional, default False): True when queries may run at once (bench --jobs)."""

    name: str

    def insert(self, trajectory: Trajectory) -> str:
        """Insert one trajectory; returns the outcome status ('inserted', 'unchanged', ...)."""

    def query(self, question: str, *, budget: int | str = "8k", image: str | None = None) -> Context:
        """Gather evidence for `question` and return it packed into `budget` tokens (8000, '8k'; at most
        budget.MAX_BUDGET; the default is budget.DEFAULT_BUDGET)."""


class Policy(Protocol):
    """Picks the next step: an assistant Message with tool calls (or plain text, which the loop answers with a nudge).

    A policy may also define `begin(task: Task)`: the loop calls it once, before the first `next`, with the query's
    structured inputs (the offline planner works from those, not from the prompt's text); `output_view_tokens`:
    how much of one tool output it reads, when more than the loop's limit (a policy with no context window to spare,
    reading its own programs' output); and `extra_tools`: ToolSpecs it calls besides the ones every policy sees."""

    name: str

    def next(self, messages: list[Message], tools: list[ToolSpec]) -> Message: ...


@runtime_checkable
class Sandbox(Protocol):
    """Runs one query's tool calls in isolation: start once, exec many times, stop at the end."""

    name: str
    store_path: Path
    limits: SandboxLimits

    def start(self) -> Sandbox: ...

    def exec(self, cmd: list[str] | str, *, timeout: float, stdin: str | None = None) -> ExecResult: ...

    def stop(self) -> None: ...

    def __enter__(self) -> Sandbox: ...

    def __exit__(self, *exc: object) -> None: ...
