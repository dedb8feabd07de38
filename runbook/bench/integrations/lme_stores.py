"""The stores of runbook's LongMemEval-V2 memories in one process: one per distinct haystack, shared between
memories with equal haystacks, at most `keep` idle ones kept for reuse, every one removed at exit (see lme_v2.py)."""

from __future__ import annotations

import atexit
import dataclasses
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

from ...memory import get_memory
from ...store import Store


@dataclasses.dataclass
class StoreEntry:
    folder: Path
    memory: Any
    config: str
    ids: list[str]
    owned: bool = True
    """False for a store the harness saved (loaded from its memory_state folder): never removed here."""
    complete: bool = False
    """The memory that built it has queried: its haystack is final and it may be shared."""
    users: int = 0
    last_used: int = 0


class StorePool:
    """This process's stores, one per distinct haystack: shared between memories with equal haystacks, at most
    `keep` idle ones kept for reuse, every one removed at exit."""

    def __init__(self) -> None:
        self.entries: list[StoreEntry] = []
        self.lock = threading.Lock()
        self.clock = 0
        atexit.register(self.clear)

    def new(self, config: str, method: str, options: dict, parent: str | None) -> StoreEntry:
        if parent:
            Path(parent).mkdir(parents=True, exist_ok=True)
        folder = Path(tempfile.mkdtemp(prefix="runbook-lme-", dir=parent))
        memory = get_memory(method, Store(folder / "store", create=True), **options)
        entry = StoreEntry(folder, memory, config, [], users=1)
        with self.lock:
            self.entries.append(entry)
        return entry

    def shares_prefix(self, config: str, ids: list[str]) -> bool:
        """A finished store whose haystack starts with `ids` exists (a memory may wait for it)."""
        n = len(ids)
        return any(e.complete and e.config == config and e.ids[:n] == ids for e in self.entries)

    def acquire(self, config: str, ids: list[str]) -> StoreEntry | None:
        """The finished store with exactly this haystack, leased; None when there is none."""
        with self.lock:
            for entry in self.entries:
                if entry.complete and entry.config == config and entry.ids == ids:
                    entry.users += 1
                    return entry
        return None

    def finish(self, entry: StoreEntry) -> None:
        with self.lock:
            entry.complete = True
            self.clock += 1
            entry.last_used = self.clock

    def release(self, entry: StoreEntry, keep: int) -> None:
        """One user fewer; idle stores beyond `keep` (least recently used first) and unfinished idle ones go."""
        with self.lock:
            entry.users -= 1
            self.clock += 1
            entry.last_used = self.clock
            idle = sorted((e for e in self.entries if e.users <= 0), key=lambda e: (e.complete, e.last_used))
            doomed = [e for e in idle if not e.complete]
            finished = [e for e in idle if e.complete]
            doomed += finished[: max(0, len(finished) - keep)]
            for gone in doomed:
                self.entries.remove(gone)
        for gone in doomed:
            self._remove(gone)

    def clear(self) -> None:
        with self.lock:
            entries, self.entries = self.entries, []
        for entry in entries:
            self._remove(entry)

    @staticmethod
    def _remove(entry: StoreEntry) -> None:
        close = getattr(entry.memory, "close", None)
        if callable(close):
            close()
        if entry.owned:
            shutil.rmtree(entry.folder, ignore_errors=True)


STORES = StorePool()


class Lease:
    """What a memory holds of the pool; released when the memory is collected (the harness drops a question's
    memory as soon as its prompt is built)."""

    def __init__(self, keep: int):
        self.entry: StoreEntry | None = None
        self.keep = keep

    def release(self) -> None:
        entry, self.entry = self.entry, None
        if entry is not None and entry.owned:
            STORES.release(entry, self.keep)
