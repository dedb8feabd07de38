"""The Memory protocol and its implementations, picked by short name.

    Memory.insert(trajectory)                                  add one trajectory to the store (and derived pools)
    Memory.query(question, *, budget="8k", image=None)         evidence for a question (a Context), within `budget`
    Memory.concurrent_queries (optional, default False)        True when queries may run at once (bench --jobs)

Implementations: `c` (coding agent in a sandbox, runbook.memory.coding_agent), `r` (knowledge pools,
runbook.memory.retrieval), `auto` (R, escalating to C when R's evidence is weak, runbook.memory.auto); baselines in
runbook.memory.baselines: `bm25` (plain BM25 over single states), `full` (the whole trajectories, newest first, cut
to the budget) and `none` (an empty context).
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..budget import DEFAULT_BUDGET
from ..context import Context
from ..errors import ConfigError
from ..trajectory.model import Trajectory

if TYPE_CHECKING:
    from ..store import Store

METHODS = {
    "c": "runbook.memory.coding_agent:CodingAgentMemory",
    "r": "runbook.memory.retrieval:RetrievalMemory",
    "bm25": "runbook.memory.baselines:BM25StateMemory",
    "auto": "runbook.memory.auto:AutoMemory",
    "full": "runbook.memory.baselines:FullTrajectoriesMemory",
    "none": "runbook.memory.baselines:NoMemory",
}


@runtime_checkable
class Memory(Protocol):
    """A long-term memory over one store.

    `concurrent_queries` (optional, default False): True when queries may run at once (bench --jobs)."""

    name: str

    def insert(self, trajectory: Trajectory) -> str:
        """Insert one trajectory; returns the outcome status ('inserted', 'unchanged', ...)."""

    def query(self, question: str, *, budget: int | str = DEFAULT_BUDGET, image: str | None = None) -> Context:
        """Gather evidence for `question` and return it packed into `budget` tokens (8000, '8k'; at most
        budget.MAX_BUDGET; the default is budget.DEFAULT_BUDGET)."""


DEFAULT_METHOD = "auto"
"""The method a query uses when none is named, in the CLI and both servers alike: R's latency on the questions R
answers well, C's depth on the others, and the only default that looks at a question's image."""
IMAGE_METHODS = frozenset({"c", "auto"})
"""Methods that look at a question's image (auto hands every question with one to C)."""


def memory_class(method: str) -> type:
    """The class registered as `method`."""
    try:
        target = METHODS[method.lower()]
    except KeyError:
        raise ConfigError(f"unknown method {method!r}: choose one of {', '.join(METHODS)}") from None
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def get_memory(method: str, store: Store | str | os.PathLike, **options: Any) -> Memory:
    """The Memory implementation named `method` over `store`."""
    return memory_class(method)(store, **options)
