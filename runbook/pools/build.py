"""Keeping the pools in step with the store: a listener for `runbook insert`, and a full rebuild (`reindex`)."""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

from ..core import segments
from ..core.bm25 import DEFAULT_FIELDS, PostingsKind
from ..core.boilerplate import LINES
from ..core.pools import PoolSnapshot
from ..errors import StoreError
from ..store import Store
from ..store.layout import POOLS_FRESH_PREFIX, POOLS_OLD_PREFIX
from ..trajectory.model import Trajectory
from .documents import TrajectoryDocs, count_terms, trajectory_docs
from .storage import PoolWriter, read_manifest, safe_opener

NoteWriter = Callable[[Trajectory], list]
"""trajectory -> [(kind, text)]: replaces the deterministic notes (e.g. a model's, cached)."""


class PoolListener:
    """A store writer listener: appends each committed trajectory's documents to the pools."""

    def __init__(self, store: Store, note_writer: NoteWriter | None = None):
        self.store = store
        self.note_writer = note_writer
        self._writer: PoolWriter | None = None
        self._before: tuple[str, dict] | None = None
        """(trajectory id, the manifest before its documents were committed): what `rollback` restores."""
        # the documents are computed in the insert's staging workers, beside the state files
        self.deriver = ("pools", _derive_docs) if note_writer is None else None

    def __call__(self, store: Store, staged, status: str) -> None:
        """Append the trajectory's documents and commit them (inside the writer's catalog transaction)."""
        self._before = None
        dirname = staged.final_dirname or staged.dirname
        docs = staged.derived.get("pools") if dirname == staged.dirname else None
        if docs is None:
            trajectory = staged.trajectory if staged.trajectory is not None else store.load(staged.trajectory_id)
            docs = trajectory_docs(trajectory, dirname, self.note_writer)
        if self._writer is None:
            self._writer = PoolWriter(store.layout)
        before = self._writer.committed
        try:
            self._writer.add(docs, staged.fingerprint)  # the version the catalog commits next
            self._writer.commit()
        except BaseException:
            self._writer.close()
            self._writer = None  # its memory is ahead of the committed manifest: the next one starts from the files
            raise
        self._before = (staged.trajectory_id, before)

    def rollback(self, staged) -> None:
        """The trajectory's catalog rows did not commit: its documents leave the pools again."""
        if self._before is not None and self._before[0] == staged.trajectory_id and self._writer is not None:
            self._writer.rollback(self._before[1])
        self._writer, self._before = None, None

    def finish(self, store: Store) -> None:
        """At the end of an insert: build the indexes the pools' new stamp needs, so that a query (and the
        read-only sandbox's `recall`) finds them ready."""
        if self._writer is not None:
            self._writer.close()
            build_caches(store.layout.pools, safe_opener(store.layout))


def _derive_docs(trajectory: Trajectory, dirname: str) -> TrajectoryDocs:
    return count_terms(trajectory_docs(trajectory, dirname, None))


def insert_with_pools(store: Store, trajectory: Trajectory) -> str:
    """Insert one trajectory and append it to the pools (what `Memory.insert` does for the pool-based methods)."""
    with store.writer() as writer:
        writer.listeners.append(insert_listener(store))
        return writer.insert(trajectory).status


def insert_listener(store: Store, note_writer: NoteWriter | None = None) -> PoolListener:
    """The callable to put in `StoreWriter.listeners` so that `runbook insert` updates the pools incrementally."""
    return PoolListener(store, note_writer)


@dataclass
class ReindexReport:
    trajectories: int = 0
    states: int = 0
    seconds: float = 0.0
    pool_bytes: int = 0

    def summary(self) -> str:
        return (
            f"{self.trajectories} trajectories, {self.states:,} states reindexed in {self.seconds:.1f} s; "
            f"pools {self.pool_bytes / 1e6:.1f} MB"
        )


def reindex(
    store: Store,
    *,
    workers: int | None = None,
    note_writer: NoteWriter | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ReindexReport:
    """Rebuild every pool from the stored trajectories, then swap the new pools in (under the write lock)."""
    start = time.perf_counter()
    report = ReindexReport()
    final = store.layout.pools
    fresh = final.with_name(f"{POOLS_FRESH_PREFIX}{os.getpid()}")
    with store.writer(check_pools=False):  # the pools are rebuilt: whatever was planted in them is discarded
        rows = store.rows()
        writer = PoolWriter(store.layout, fresh, fresh=True)
        # stamps only grow: a server never takes new pools for old, nor a segment of the old folder for the new's
        writer.manifest["stamp"] = writer.manifest["born"] = _last_stamp(store)
        for n, docs in enumerate(_docs_in_order(store, rows, workers, note_writer), 1):
            writer.add(docs)
            report.trajectories += 1
            report.states += len(docs.slices)
            if n % 64 == 0:
                writer.commit()
            if progress:
                progress(n, len(rows))
        writer.commit()
        writer.close()
        build_caches(fresh, safe_opener(store.layout))
        _swap(fresh, final)
    report.pool_bytes = folder_bytes(final)
    report.seconds = time.perf_counter() - start
    return report


def _last_stamp(store: Store) -> int:
    """The stamp of the pools being replaced (0 when they cannot be read)."""
    try:
        return int(read_manifest(store.layout.pools, safe_opener(store.layout))["stamp"])
    except (StoreError, OSError, KeyError, TypeError, ValueError):
        return 0


def build_caches(pools_root, opener=None) -> None:
    """The BM25 indexes (default field weights) and line counts for the pools' current stamp: the segments of the
    documents added since the last build, merged with earlier ones by core.segments' rule; the files no reader of
    this stamp needs (merged into others, stale, of another version) are removed (a reader still on an older
    stamp has mapped its segments already, or builds them in memory)."""
    snapshot = PoolSnapshot(pools_root, *([opener] if opener else []))
    kinds: list[segments.Kind] = [PostingsKind(pool, fields) for pool, fields in DEFAULT_FIELDS.items()]
    kinds.append(LINES)
    used = {}
    for kind in kinds:
        found = segments.load_segments(snapshot, kind, write=True)
        used[kind.group] = {kind.file_name(snapshot, s) for s in found}
    for stale in segments.stale_files(snapshot, used):
        with contextlib.suppress(OSError):
            stale.unlink()  # a name in the store's own cache folder: unlinking a planted link removes the link


def _docs_in_order(store: Store, rows, workers: int | None, note_writer) -> Iterator[TrajectoryDocs]:
    workers = workers if workers is not None else min(2, os.cpu_count() or 1)
    jobs = [(str(store.root), row.id, row.dir) for row in rows]
    if workers <= 1 or note_writer is not None or len(jobs) < 8:
        for job in jobs:
            yield _docs_for(job, note_writer)
        return
    with ProcessPoolExecutor(max_workers=workers) as pool:
        yield from pool.map(_docs_for, jobs, chunksize=4)


def _docs_for(job: tuple[str, str, str], note_writer=None) -> TrajectoryDocs:
    root, trajectory_id, dirname = job
    return count_terms(trajectory_docs(Store(root).load(trajectory_id), dirname, note_writer))


def _swap(fresh, final) -> None:
    trash = final.with_name(f"{POOLS_OLD_PREFIX}{os.getpid()}")
    if final.exists() or final.is_symlink():
        os.replace(final, trash)
    os.replace(fresh, final)
    if trash.is_symlink():  # a planted link is removed itself; rmtree would refuse it, and must not follow it
        trash.unlink()
    else:
        shutil.rmtree(trash, ignore_errors=True)


def folder_bytes(folder) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.exists() else 0
