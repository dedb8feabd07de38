"""`runbook insert`: validate every source, then prepare and insert trajectories one by one, with progress."""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from .budget import stored_token_counts_of_parts
from .errors import InputError
from .store import InsertOutcome, Store
from .store.space import STORE_PER_INPUT_BYTE, input_json_bytes
from .store.staging import StagedTrajectory, stage
from .trajectory.limits import DEFAULT_LIMITS, ReadLimits
from .trajectory.model import Trajectory
from .trajectory.sources import iter_sources


@dataclass
class InsertReport:
    """The summary line of an insert run."""

    inserted: int = 0
    replaced: int = 0
    unchanged: int = 0
    refused: int = 0
    invalid: list[InputError] = field(default_factory=list)
    refusals: list[InsertOutcome] = field(default_factory=list)
    states: int = 0
    tokens: int = 0
    input_bytes: int = 0
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.invalid and not self.refused

    def add(self, outcome: InsertOutcome) -> None:
        setattr(self, outcome.status, getattr(self, outcome.status) + 1)
        if outcome.status == "refused":
            self.refusals.append(outcome)
        elif outcome.status != "unchanged":
            self.states += outcome.states
            self.tokens += outcome.tokens

    def summary(self) -> str:
        parts = [f"{self.inserted} inserted"]
        if self.replaced:
            parts.append(f"{self.replaced} replaced")
        parts += [
            f"{self.unchanged} unchanged",
            f"{self.refused + len(self.invalid)} refused",
            f"{self.states:,} states",
            f"{self.tokens:,} tokens",
            f"{self.seconds:.1f} s",
        ]
        return ", ".join(parts)


ProgressFn = Callable[[int, int], None]
"""progress(items_done, items_total)."""


def _read_all(paths, screenshot_root: str | None, limits: ReadLimits) -> Iterator[Trajectory | InputError]:
    for path, reader in iter_sources(paths):
        yield from reader.read(path, screenshot_root=screenshot_root, limits=limits)


def validate(
    paths: Iterable[str | os.PathLike],
    *,
    screenshot_root: str | os.PathLike | None = None,
    limits: ReadLimits = DEFAULT_LIMITS,
) -> tuple[int, list[InputError], int]:
    """First pass: (valid trajectory count, errors, input bytes). Nothing is written."""
    paths = list(paths)
    screenshot_root = _screenshot_root(screenshot_root)
    valid, errors, size = 0, [], 0
    for path, _reader in iter_sources(paths):
        size += _size(path)
    for item in _read_all(paths, screenshot_root, limits):
        if isinstance(item, InputError):
            errors.append(item)
        else:
            valid += 1
    return valid, errors, size


def _screenshot_root(root: str | os.PathLike | None) -> str | None:
    if root is None:
        return None
    if not os.path.isdir(root):
        raise InputError(
            "is not a folder: the screenshot root must be the folder that holds the screenshots", path=str(root)
        )
    return os.fspath(root)


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def insert_paths(
    store: Store,
    paths: Iterable[str | os.PathLike],
    *,
    replace: bool = False,
    skip_invalid: bool = False,
    workers: int | None = None,
    progress: ProgressFn | None = None,
    listeners=(),
    screenshot_root: str | os.PathLike | None = None,
    limits: ReadLimits = DEFAULT_LIMITS,
) -> InsertReport:
    """Insert every trajectory under `paths`. Invalid input refuses the whole run unless `skip_invalid`.

    Screenshots must lie inside the folder of the source that names them, or inside `screenshot_root` instead.
    `limits` bound each source's decompressed bytes, per file and per line (trajectory/limits.py).

    A listener with a `deriver` attribute ((name, picklable function)) has that function run in the staging
    workers; its result reaches the listener as `staged.derived[name]`.
    """
    paths = list(paths)
    start = time.perf_counter()
    workers = workers if workers is not None else min(2, os.cpu_count() or 1)
    derivers = tuple(listener.deriver for listener in listeners if getattr(listener, "deriver", None))
    json_bytes = input_json_bytes(paths)
    needed = json_bytes * STORE_PER_INPUT_BYTE
    with _staging_pool(workers, derivers, early=json_bytes >= EARLY_START_BYTES) as pool:
        total, errors, size = validate(paths, screenshot_root=screenshot_root, limits=limits)
        report = InsertReport(input_bytes=size, invalid=errors)
        if errors and not skip_invalid:
            report.seconds = time.perf_counter() - start
            return report
        done = 0
        with store.writer() as writer:
            writer.space_needed = lambda: int(needed * (total - done) / max(total, 1))  # for a full disk's message
            writer.listeners.extend(listeners)
            valid = (
                item
                for item in _read_all(paths, _screenshot_root(screenshot_root), limits)
                if not isinstance(item, InputError)
            )
            for staged in _staged(valid, writer, pool, workers, derivers):
                report.add(writer.commit(staged, replace=replace))
                done += 1
                if progress:
                    progress(done, total)
    report.seconds = time.perf_counter() - start
    return report


EARLY_START_BYTES = 16 << 20
"""Input (decompressed) from which the staging workers start before the sources are validated: a worker's start (a
new interpreter, its imports, the tokenizer's tables) took about a second that the writer spent validating alone.
Below it they start at the first trajectory, as they did, and only as many as there is work for."""


@contextlib.contextmanager
def _staging_pool(workers: int, derivers: tuple, *, early: bool) -> Iterator[ProcessPoolExecutor | None]:
    """The staging workers (None for one worker: staging runs in this process). A run refused for invalid input
    does not wait for workers started early."""
    if workers <= 1:
        yield None
        return
    # spawned workers hold no copy of the writer's lock file, so a killed writer's lock dies with it
    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_init_worker,
        initargs=(os.getpid(),),
    )
    finished = False
    try:
        for _ in range(workers if early else 0):
            pool.submit(_warm_up, derivers)
        yield pool
        finished = True
    finally:
        pool.shutdown(wait=finished, cancel_futures=True)


def _warm_up(derivers: tuple) -> None:
    """In a new staging worker: load what staging needs first (the derivers' modules came with them)."""
    stored_token_counts_of_parts([("", "warm")])


def _staged(
    trajectories: Iterable[Trajectory], writer, pool: ProcessPoolExecutor | None, workers: int, derivers=()
) -> Iterator[StagedTrajectory]:
    """Stage trajectories (render, count tokens, write files), in the pool's worker processes when there is one;
    order is kept, since it is the insertion order."""
    known = writer.known_fingerprints()
    root = writer.layout.trajectories
    if pool is None:
        for traj in trajectories:
            staged = stage(traj, root, known.get(traj.id), derivers=derivers)
            staged.trajectory = traj
            yield staged
        return
    window: list = []  # a bounded window of futures keeps memory flat however large the input
    try:
        for traj in trajectories:
            window.append((traj, pool.submit(stage, traj, root, known.get(traj.id), derivers)))
            if len(window) >= workers * 4:
                yield _attach(*window.pop(0))
        while window:
            yield _attach(*window.pop(0))
    finally:
        for _traj, fut in window:  # staged but never committed: the writer's recovery would remove them too
            fut.cancel()
            if fut.done() and not fut.cancelled() and fut.exception() is None and fut.result().folder:
                shutil.rmtree(fut.result().folder, ignore_errors=True)


WORKER_GC_THRESHOLD = 50_000
"""A staging worker's first-generation collection threshold (Python's default is 700). A page's parse allocates a
node per line, all alive until the page is done: at 700 the collector ran every few hundred lines and promoted whole
trees into older generations it then walked again, a fifth of the staging work (9.2 -> 7.3 s CPU for 300 real
trajectories in one process). The parse makes no reference cycles, so reference counting frees it either way."""


def _init_worker(parent_pid: int) -> None:
    """In a staging worker: collect garbage rarely, and end when the writer is gone."""
    gc.freeze()  # what the worker imported lives as long as it does: no collection need walk it again
    gc.set_threshold(WORKER_GC_THRESHOLD, *gc.get_threshold()[1:])
    _exit_with_parent(parent_pid)


def _exit_with_parent(parent_pid: int) -> None:
    """In a worker: end when the writer is gone (killed with -9, its workers would otherwise wait forever)."""

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(0.2)
        os._exit(0)

    threading.Thread(target=watch, daemon=True, name="exit-with-parent").start()


def _attach(traj: Trajectory, future) -> StagedTrajectory:
    staged = future.result()
    staged.trajectory = traj
    return staged
