"""The plain-file store: layout, atomic idempotent insert, SQLite catalog, locking, stats."""

from .catalog import TrajectoryRow
from .layout import Layout
from .staging import StagedTrajectory, stage
from .store import Store
from .writer import InsertOutcome, StoreWriter

__all__ = ["Store", "StoreWriter", "InsertOutcome", "TrajectoryRow", "Layout", "StagedTrajectory", "stage"]
