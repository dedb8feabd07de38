"""Trajectories: the canonical model and the readers for each input format."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import ModuleType

from .model import State, Trajectory, trajectory_from_dict
from .readers import detect_reader

__all__ = ["State", "Trajectory", "trajectory_from_dict", "detect_reader", "iter_sources"]


def iter_sources(paths: Iterable[str | os.PathLike]) -> Iterator[tuple[Path, ModuleType]]:
    """Expand the user's paths into (path, reader) pairs; a directory is searched for known formats."""
    from .sources import iter_sources as _iter

    return _iter(paths)
