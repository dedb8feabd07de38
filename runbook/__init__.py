"""runbook: a long-term memory for web agents.

Insert trajectories into a plain-file store; query it for cited evidence cut to a token budget.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from .errors import (
    BudgetError,
    ConfigError,
    ConflictError,
    InputError,
    RunbookError,
    SandboxError,
    StoreError,
    UnknownFormatError,
)
from .store import Store
from .trajectory import State, Trajectory
from .version import __version__

if TYPE_CHECKING:
    from .memory import Memory


def open(store: str | os.PathLike, method: str = "r", **options: Any) -> Memory:  # noqa: A001 (as tarfile.open)
    """A memory over `store` (a folder, created if missing) for in-process agents:

    memory = runbook.open(".runbook")                  # method R; method="c" or "auto" for the others
    memory.insert(trajectory)                          # a runbook.Trajectory
    context = memory.query("Where is the Bestsellers report?", budget=4000)
    context.items[0].trajectory_id, context.to_markdown()
    """
    from .memory import get_memory

    return get_memory(method, Store(store, create=True), **options)


__all__ = [
    "open",
    "Store",
    "Trajectory",
    "State",
    "RunbookError",
    "InputError",
    "UnknownFormatError",
    "StoreError",
    "ConflictError",
    "BudgetError",
    "SandboxError",
    "ConfigError",
    "__version__",
]
