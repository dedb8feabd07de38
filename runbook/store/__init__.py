"""The plain-file store: layout, atomic idempotent insert, SQLite catalog, locking, stats."""
from .catalog import TrajectoryRow
from .layout import Layout
from .prepare import PreparedTrajectory, prepare
from .store import InsertOutcome, Store, StoreWriter

__all__ = ["Store", "StoreWriter", "InsertOutcome", "TrajectoryRow", "Layout", "PreparedTrajectory", "prepare"]
