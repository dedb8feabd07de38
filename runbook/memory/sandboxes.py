"""Sandboxes for method C's queries: a fresh one per query, never reused. A long-lived memory (a benchmark run, a
server) may keep one started ahead (`warm`): the next query's container starts in the background while this one
runs, so a query does not wait for it (measured on docker: start ~0.45 s of a ~1.5 s query). A one-shot CLI query
keeps none: the spare would only delay its exit. A used docker container is removed in the background either way
(~0.08 s), while the query packs its context; close() and the interpreter's exit wait for that.

    supply = SandboxSupply(lambda: get_sandbox("docker", store_root), warm=True)
    with supply.sandbox() as box:          # started, used by this query only
        box.exec(["search", "Price"], timeout=30)
    supply.close()                          # stops the spare (the exit hook would too)
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager

from ..sandbox.base import Sandbox

log = logging.getLogger(__name__)

SPARE_SECONDS = 600.0
"""A spare older than this is replaced rather than used: the sandbox's init ends on its own after an hour."""
WARM_BACKENDS = frozenset({"docker"})
"""Backends whose sandbox may start on another thread: a bwrap jail dies with the thread that started it (and
starts in ~0.1 s anyway)."""


class SandboxSupply:
    """Started sandboxes, one per query; with `warm`, one spare kept started ahead."""

    def __init__(self, make: Callable[[], Sandbox], *, warm: bool = False):
        self.make = make
        self.warm = warm
        self._lock = threading.Lock()
        self._spare: tuple[Future, float] | None = None
        self._background = ThreadPoolExecutor(max_workers=2, thread_name_prefix="runbook-sandbox")

    @contextmanager
    def sandbox(self) -> Iterator[Sandbox]:
        """A started sandbox for one query; stopped when the query is done (in the background for docker)."""
        box = self._take()
        try:
            yield box
        finally:
            self._retire(box)

    def close(self) -> None:
        """Stop the spare, if any, and wait for background starts and stops."""
        with self._lock:
            spare, self._spare = self._spare, None
        if spare is not None:
            self._stop_quietly(spare[0])
        self._background.shutdown(wait=True)

    # -- internals -----------------------------------------------------------------------------------------------
    def _take(self) -> Sandbox:
        with self._lock:
            spare, self._spare = self._spare, None
        box = None
        if spare is not None:
            future, born = spare
            if time.monotonic() - born > SPARE_SECONDS:
                self._background.submit(self._stop_quietly, future)
            else:
                try:
                    box = future.result()
                except Exception as exc:  # a spare that failed to start: this query starts its own, and says why
                    log.warning("the spare sandbox did not start (%s); starting one now", exc)
        if box is None:
            box = self.make()
            box.start()
        self._refill(box)
        return box

    def _refill(self, box: Sandbox) -> None:
        if not self.warm or getattr(box, "name", "") not in WARM_BACKENDS:
            return
        with self._lock:
            if self._spare is None:
                self._spare = (self._background.submit(self._start_new), time.monotonic())

    def _start_new(self) -> Sandbox:
        box = self.make()
        box.start()
        return box

    def _retire(self, box: Sandbox) -> None:
        if getattr(box, "name", "") in WARM_BACKENDS:
            try:
                self._background.submit(box.stop)
                return
            except RuntimeError:  # closed already (a query after close()): stop it here
                pass
        box.stop()

    @staticmethod
    def _stop_quietly(future: Future) -> None:
        try:
            future.result().stop()
        except Exception:
            pass  # it never started, or is gone: the exit hook and the next start's sweep remove leftovers
