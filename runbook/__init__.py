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


def open(  # noqa: A001 (as tarfile.open)
    store: str | os.PathLike, method: str | None = None, *, create: bool = False, **options: Any
) -> Memory:
    """A memory over the store folder `store` for in-process agents, with the CLI's and the servers' defaults
    (method auto, budget 8k); a missing store is a StoreError unless `create=True` starts an empty one:

    memory = runbook.open(".runbook")                  # method auto; method="r" or "c" for one of them
    memory.insert(trajectory)                          # a runbook.Trajectory
    context = memory.query("Where is the Bestsellers report?")          # budget="4k" or 4000 for another budget
    context.items[0].trajectory_id, context.to_markdown()
    """
    from .memory import DEFAULT_METHOD, get_memory

    try:
        opened = Store(store, create=create)
    except StoreError as exc:
        if create:
            raise
        raise StoreError(f"{exc}; or runbook.open({str(store)!r}, create=True) starts an empty store") from exc
    return get_memory(method or DEFAULT_METHOD, opened, **options)


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
