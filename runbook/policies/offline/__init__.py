"""The offline planner: method C's policy when no model is configured (see planner.py for the plan)."""

from .planner import OfflinePlanner

__all__ = ["OfflinePlanner"]
