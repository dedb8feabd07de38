"""runbook: a long-term memory for web agents.

Insert trajectories into a plain-file store; query it for cited evidence cut to a token budget.
"""
from .errors import (BudgetError, ConfigError, ConflictError, InputError, RunbookError, SandboxError, StoreError,
                     UnknownFormatError)
from .store import Store
from .trajectory import State, Trajectory

__version__ = "0.1.0"

__all__ = ["Store", "Trajectory", "State", "RunbookError", "InputError", "UnknownFormatError", "StoreError",
           "ConflictError", "BudgetError", "SandboxError", "ConfigError", "__version__"]
