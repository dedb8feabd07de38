"""`runbook bench run --ray`: the same matrix on a Ray cluster; the driver alone writes the run folders.

Each haystack's store is prepared by one Ray task (built, or found built, under the config's `stores_dir`). Each
(haystack, run point) with questions left gets one actor holding the point's Memory over that store (as the local
runner keeps one Memory per point: C's warm sandbox, R's pools), and each question is one call of that actor. The
actor takes a CPU, and a `sandbox` slot for a method that runs code when the cluster's nodes declare that resource
(`ray start --resources '{"sandbox": N}'` on the nodes that have the sandbox's engine). Ray places the actors and
retries what a lost worker was doing: an actor whose process or node dies is restarted on a live node and its
unanswered calls run again there (`max_restarts`, `max_task_retries`). The driver appends each record as it arrives,
so a run stopped anywhere resumes like a local one.

Every node must reach the config's question sets, trajectories, stores and run folders by the same absolute path
(one machine, or a shared file system), and run the same runbook (`pip install 'runbook[ray]'` on each).
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError, RunbookError
from ..store import Store
from .answering import answer_question, make_memory, new_query_lock, uses_sandbox
from .config import BenchConfig, RunPoint
from .grading import build_grader
from .progress import Progress
from .questions import Haystack, Question
from .run_folder import RunFolder
from .stores import HaystackStore, given_store, prepare_store

INSTALL_HINT = "pip install 'runbook[ray]'"
SANDBOX_RESOURCE = "sandbox"
"""The custom resource a node declares for each sandbox it can run at once."""
RESTARTS = 3
"""How often an actor is restarted after its worker process or node is lost. Its unanswered calls wait for it and
are retried without a count of their own (a count runs out while a restart waits for a node with room); a failure
that repeats ends when the restarts do."""


LOOPBACK_HOSTS = ("127.0.0.1", "localhost")


def import_ray(address: str | None = None):
    """Ray, or a ConfigError saying how to get it."""
    if address and address.rsplit(":", 1)[0] in LOOPBACK_HOSTS and "ray" not in sys.modules:
        # Ray turns a loopback address into the machine's routable one unless this is 0 (read at import): a cluster
        # on 127.0.0.1 (benchmarks/ray_cluster.py) is then unreachable
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    try:
        import ray
    except ImportError:
        raise ConfigError(f"--ray needs Ray, an optional part of runbook: {INSTALL_HINT}") from None
    return ray


def _check_reachable(address: str) -> None:
    """A HOST:PORT where nothing listens fails now (ray.init would wait minutes for it)."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        return  # "auto", or a ray:// address: Ray resolves it
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as exc:
        raise ConfigError(f"no Ray cluster answers at {address}: {exc}. Start one (`ray start --head`) first") from None


@dataclass
class StoreInfo:
    """What a store task hands back: small enough to travel inline with the driver's reference."""

    root: str
    key: str
    manifest: dict
    notes: list[str] = field(default_factory=list)
    """What preparing the store said (a reindex of pools this runbook could not read), for the driver to show."""

    def open(self) -> HaystackStore:
        return HaystackStore(Store(self.root), self.key, self.manifest)

    @property
    def write_failures(self) -> int:
        return HaystackStore(None, self.key, self.manifest).write_failures  # type: ignore[arg-type]


def prepare_store_task(
    haystack: Haystack, stores_dir: Path, rebuild: bool, workers: int | None, given: Path | None = None
) -> StoreInfo:
    """Runs on a node: the haystack's store, built there if no finished one exists (or the config's own store)."""
    notes: list[str] = []
    if given is not None:
        ready = given_store(haystack, given)
    else:
        ready = prepare_store(haystack, stores_dir, rebuild=rebuild, workers=workers, note=notes.append)
    return StoreInfo(str(ready.store.root), ready.key, ready.manifest, notes)


class PointAnswerer:
    """Runs on a node: one run point's Memory over one haystack's store, answering that point's questions."""

    def __init__(self, point: RunPoint, store: StoreInfo, use_reader: bool):
        config = point.config
        self.point = point
        self.ready = store.open()
        self.memory = make_memory(point, self.ready)
        self.grader = build_grader(config.reader, config.judge) if config.reader and use_reader else None
        self.lock = new_query_lock(self.memory)

    def answer(self, question: Question) -> dict[str, Any]:
        return answer_question(question, self.memory, self.point.budget, self.ready, self.grader, self.lock)

    def close(self) -> None:
        if hasattr(self.memory, "close"):
            self.memory.close()  # e.g. method C's sandbox kept warm between queries


@contextlib.contextmanager
def ray_session(address: str) -> Iterator[Any]:
    """Ray connected to the cluster at `address` (left as it was when the caller already connected)."""
    ray = import_ray(address)
    if ray.is_initialized():
        yield ray
        return
    _check_reachable(address)
    try:
        ray.init(address=address, log_to_driver=False, configure_logging=False)
    except (ConnectionError, ValueError, RuntimeError) as exc:
        raise ConfigError(
            f"no Ray cluster at {address!r}: {exc}. Start one (`ray start --head`) or pass its address "
            f"(--ray HOST:PORT)"
        ) from None
    try:
        yield ray
    finally:
        ray.shutdown()  # the driver's actors go with it (a failed run's warm sandboxes are reaped later)


def answer_on_ray(
    ray,
    config: BenchConfig,
    work: dict[Haystack, list[Question]],
    points: list[RunPoint],
    runs: dict[str, RunFolder],
    *,
    jobs: int,
    use_reader: bool,
    rebuild_stores: bool,
    insert_workers: int | None,
    progress: Progress,
) -> dict[str, int]:
    """Answer every point's unanswered questions on the cluster `ray` is connected to, appending records to `runs`
    as they arrive; returns each haystack's store write failures."""
    store_task = ray.remote(prepare_store_task).options(num_cpus=1, max_retries=RESTARTS)
    stores = {
        store_task.remote(haystack, config.stores_dir, rebuild_stores, insert_workers, config.store): haystack
        for haystack in work
    }
    answering = _Answering(
        ray, ray.remote(PointAnswerer), jobs, use_reader, SANDBOX_RESOURCE in ray.cluster_resources()
    )
    infos: dict[Haystack, StoreInfo] = {}
    while stores or answering.calls:
        [ref], _ = ray.wait([*stores, *answering.calls], num_returns=1)
        if ref not in stores:
            answering.finish(ref, progress)
            continue
        # a store is ready: one actor per point with questions left on it
        haystack = stores.pop(ref)
        infos[haystack] = info = _result(ray, ref)
        for line in info.notes:
            progress.note(line)
        for point in points:
            run = runs[point.slug]
            asked = work[haystack]
            todo = [q for q in asked if not run.done(q.id)]
            if todo:
                progress.begin(point.label, len(asked), len(asked) - len(todo))
                answering.start(haystack, info, point, run, todo)
    ray.get(answering.closing)
    return {haystack.name: info.write_failures for haystack, info in infos.items()}


@dataclass
class _Answering:
    """The point answerers (actors) of a run on the cluster, and their calls in flight with each one's run."""

    ray: Any
    answerer: Any
    """PointAnswerer as a Ray actor class."""
    jobs: int
    use_reader: bool
    sandbox_slots: bool
    """The cluster's nodes declare how many sandboxes each can run at once (SANDBOX_RESOURCE)."""
    actors: dict[tuple[str, str], Any] = field(default_factory=dict)
    calls: dict[Any, tuple[tuple[str, str], RunFolder]] = field(default_factory=dict)
    left: dict[tuple[str, str], int] = field(default_factory=dict)
    closing: list = field(default_factory=list)

    def start(self, haystack: Haystack, info: StoreInfo, point: RunPoint, run: RunFolder, todo: list) -> None:
        """An actor for `point` over the store `info` describes, asked every question of `todo` at once."""
        key = (haystack.name or str(haystack.source), point.slug)
        # the store's location goes by value: a restarted actor needs nothing but its arguments
        actor = self.answerer.options(
            num_cpus=1,
            resources={SANDBOX_RESOURCE: 1} if self.sandbox_slots and uses_sandbox(point) else None,
            max_restarts=RESTARTS,
            max_task_retries=-1,
            max_concurrency=self.jobs,
        ).remote(point, info, self.use_reader)
        self.actors[key], self.left[key] = actor, len(todo)
        for question in todo:
            self.calls[actor.answer.remote(question)] = (key, run)

    def finish(self, ref: Any, progress: Progress) -> None:
        """An answer arrived: appended to its run; the actor closes after its last one."""
        key, run = self.calls.pop(ref)
        run.append(_result(self.ray, ref))
        progress.advance(run.config["label"])
        self.left[key] -= 1
        if not self.left[key]:
            self.closing.append(self.actors.pop(key).close.remote())


def _result(ray, ref) -> Any:
    """A task's or call's result; an error runbook raised on purpose on a node is raised here as itself."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as exc:
        if isinstance(exc.cause, RunbookError):
            raise exc.cause from None
        raise
