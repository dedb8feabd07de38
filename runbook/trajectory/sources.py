"""Expand user-given paths into (path, reader) pairs; folders are searched for every known format."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import ModuleType

from ..errors import InputError, UnknownFormatError
from .readers import READERS, detect_reader

_SKIP_DIRS = {".git", "__pycache__", "screenshots", ".runbook", "node_modules"}


def iter_sources(paths: Iterable[str | os.PathLike]) -> Iterator[tuple[Path, ModuleType]]:
    """Each given file is read by its detected reader; a folder is either one trajectory folder or is walked."""
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise InputError("no such file or folder", path=str(path))
        if path.is_file():
            yield path, detect_reader(path)
            continue
        found = list(_walk(path))
        if not found:
            raise UnknownFormatError(
                "the folder holds no trajectory files (.json, .jsonl, .jsonl.gz) or "
                "trajectory folders (BrowserGym/AgentLab, browser-use)",
                path=str(path),
            )
        yield from found


def _walk(folder: Path) -> Iterator[tuple[Path, ModuleType]]:
    for reader in READERS:
        if reader.detect(folder):
            yield folder, reader
            return
    for entry in sorted(folder.iterdir()):
        if entry.name in _SKIP_DIRS or entry.name.startswith("."):
            continue
        if entry.is_dir():
            yield from _walk(entry)
        elif entry.name.lower() != "questions.jsonl" and not entry.name.lower().startswith("questions"):
            # question files sit beside trajectories in benchmark folders; they are not trajectories
            for reader in READERS:
                if reader.detect(entry):
                    yield entry, reader
                    break
