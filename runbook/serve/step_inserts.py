"""The re-inserts of trajectories streamed with `visible="step"`, run in the background, one at a time.

A re-insert writes the whole trajectory again (every state file names how many states there are), so it costs more
with every step: done inside each append, the 150th append of a run took 1.5 s where the first took 0.24 s. Here
an append only journals its step (a constant cost) and asks for a re-insert; the steps that arrive while one runs
go into the next, so an agent never waits for one, and queries see each step once its re-insert commits.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)


class StepInserts:
    """A queue of trajectory ids to re-insert, worked by one thread; `reinsert(id)` does the writing."""

    def __init__(self, reinsert: Callable[[str], None]):
        self._reinsert = reinsert
        self._pending: dict[str, None] = {}  # insertion-ordered set: first asked, first written
        self._busy: str | None = None
        self._changed = threading.Condition()
        self._worker: threading.Thread | None = None

    def request(self, trajectory_id: str) -> None:
        """Re-insert the trajectory soon (once, however many steps arrive before its turn)."""
        with self._changed:
            self._pending[trajectory_id] = None
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(target=self._work, name="runbook-step-inserts", daemon=True)
                self._worker.start()
            self._changed.notify_all()

    def settle(self, timeout: float | None = None) -> bool:
        """Wait until every re-insert asked for so far has been written; False when `timeout` ran out first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._changed:
            while self._pending or self._busy is not None:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._changed.wait(left)
        return True

    def _work(self) -> None:
        while True:
            with self._changed:
                if not self._pending:
                    self._worker = None
                    return
                trajectory_id = next(iter(self._pending))
                del self._pending[trajectory_id]
                self._busy = trajectory_id
            try:
                self._reinsert(trajectory_id)
            except Exception:  # noqa: BLE001 - its steps stay journaled: the next step or the close writes them
                log.exception("re-inserting streamed trajectory %s after a step failed", trajectory_id)
            finally:
                with self._changed:
                    self._busy = None
                    self._changed.notify_all()
