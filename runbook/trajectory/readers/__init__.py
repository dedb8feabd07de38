"""Readers that turn input files and folders into canonical Trajectories.

Each reader module exposes:
    NAME: str                                            short format name shown to users
    detect(path: Path) -> bool                           cheap check: is this path in my format?
    read(path: Path) -> Iterator[Trajectory | InputError]
        yields one item per trajectory found; a malformed trajectory is yielded as an InputError (so that
        --skip-invalid can go on), while a path that is unreadable as a whole raises InputError.
`detect_reader(path)` picks the first reader whose detect() says yes.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from ...errors import UnknownFormatError
from . import jsonl

# Order matters: folder formats first, then files; jsonl is the catch-all for .json/.jsonl(.gz).
READERS: list[ModuleType] = [jsonl]


def _register_optional() -> None:
    import importlib

    for name in ("browsergym", "browser_use"):
        try:
            mod = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
            continue
        READERS.insert(len(READERS) - 1, mod)


_register_optional()


def detect_reader(path: Path) -> ModuleType:
    """The reader for this file or folder, or UnknownFormatError saying what was expected."""
    for reader in READERS:
        if reader.detect(path):
            return reader
    raise UnknownFormatError(
        "unknown trajectory format: expected a .json/.jsonl/.jsonl.gz trajectory file, a BrowserGym/AgentLab "
        "result folder (steps_info_<N>.json + summary_info.json), or a browser-use folder (history.json)",
        path=str(path),
    )
