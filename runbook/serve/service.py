"""What the servers serve, in one place: queries, whole and streamed inserts, stats and reads over one store.

    service = MemoryService(".runbook")
    service.query("Where is the Bestsellers report?", budget=4000, method="r")      # the context as JSON
    service.open_trajectory("run-7", goal="Cancel order 305", site="shop")        # an agent starts a task
    service.append_state("run-7", {"url": ..., "accessibility_tree": ..., "action": ...})
    service.close_trajectory("run-7")                                              # visible to queries now

Readers never see a partial trajectory: a streamed one is validated step by step, held here, and inserted as one
atomic insert when it is closed (or, with `visible="step"`, re-inserted whole after every step). One writer at a
time: another waits up to `write_timeout` seconds, then gets a BusyError. Method C's sandboxes are capped: at most
`max_sandboxes` C (or escalated auto) queries run at once, others wait up to `sandbox_wait` seconds.
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from ..core.layout import state_relpath
from ..errors import InputError, RunbookError, StoreChanging, StoreError
from ..memory import METHODS, get_memory
from ..pools.build import insert_with_pools
from ..store import Store
from ..store.staging import fingerprint
from ..trajectory.model import trajectory_from_dict

log = logging.getLogger(__name__)

SANDBOX_METHODS = frozenset({"c", "auto"})
"""Methods that may start a sandbox per query."""
STATE_FIELDS = (
    "url",
    "title",
    "accessibility_tree",
    "text",
    "page_text",
    "action",
    "action_error",
    "thought",
    "timestamp",
    "screenshot",
)
"""What one streamed step may carry (the trajectory schema's state fields)."""


class BusyError(RunbookError):
    """The store's writer, or every sandbox, stayed busy for longer than the caller agreed to wait."""


class NotFound(RunbookError):
    """No such trajectory, open trajectory or state."""


@dataclass
class OpenTrajectory:
    """A trajectory an agent is still writing: its fields and the steps so far."""

    fields: dict[str, Any]
    states: list[dict[str, Any]] = field(default_factory=list)
    visible: str = "close"
    """'close': inserted when closed; 'step': re-inserted after every step."""
    opened: float = field(default_factory=time.time)
    closing: bool = False
    """Its close is writing it: no more steps, no second close."""


class MemoryService:
    """Queries, inserts and reads over one store, safe to call from many threads."""

    def __init__(
        self,
        store_path: str | os.PathLike,
        *,
        screenshot_root: str | os.PathLike | None = None,
        max_sandboxes: int = 2,
        sandbox_wait: float = 60.0,
        write_timeout: float = 30.0,
        memory_options: dict[str, Any] | None = None,
    ):
        self.store = Store(store_path, create=True)
        # without a screenshot root a posted screenshot path resolves inside an empty folder: refused, never read
        self._no_shots: tempfile.TemporaryDirectory[str] | None = None
        if screenshot_root:
            self.screenshot_root = str(screenshot_root)
        else:
            self._no_shots = tempfile.TemporaryDirectory(prefix="runbook-serve-")
            self.screenshot_root = self._no_shots.name
        self.sandbox_wait, self.write_timeout = sandbox_wait, write_timeout
        self.memory_options = dict(memory_options or {})
        self._memories: dict[str, Any] = {}
        self._memories_lock = threading.Lock()
        self._sandboxes = threading.BoundedSemaphore(max_sandboxes)
        self._writer = threading.Lock()
        self._open: dict[str, OpenTrajectory] = {}
        self._open_lock = threading.Lock()

    # -- queries -----------------------------------------------------------------------------------------------
    def query(self, question: str, *, budget: int, method: str = "r", image: str | None = None) -> dict:
        """The context for `question` as JSON: analysis and items, each citing trajectory, state, url and time."""
        if method not in METHODS:
            raise InputError(f"unknown method {method!r}: choose one of {', '.join(sorted(METHODS))}", field="method")
        if budget < 1:
            raise InputError("must be at least 1 token", field="budget")
        memory = self._memory(method)
        if method in SANDBOX_METHODS:
            if not self._sandboxes.acquire(timeout=self.sandbox_wait):
                raise BusyError(
                    f"every sandbox stayed busy for {self.sandbox_wait:.0f} s: retry later, or use "
                    f"method 'r', which needs none"
                )
            try:
                context = memory.query(question, budget=budget, image=image)
            finally:
                self._sandboxes.release()
        else:
            context = memory.query(question, budget=budget, image=image)
        return context.to_json()

    def _memory(self, method: str):
        with self._memories_lock:
            if method not in self._memories:
                options = dict(self.memory_options)
                if method in SANDBOX_METHODS:
                    options.setdefault("warm", True)  # a server is long-lived: keep the next sandbox started
                self._memories[method] = get_memory(method, self.store, **options)
            return self._memories[method]

    # -- inserts -----------------------------------------------------------------------------------------------
    def insert(self, obj: dict) -> dict:
        """Insert one whole trajectory (the JSONL schema); {'trajectory_id', 'status'}."""
        trajectory = self._validate(obj)
        return {"trajectory_id": trajectory.id, "status": self._write(trajectory, replace=False)}

    def open_trajectory(self, trajectory_id: str, *, visible: str = "close", **fields: Any) -> dict:
        """Start a trajectory an agent streams step by step (goal, site, start_url, outcome, ... as `fields`)."""
        if visible not in ("close", "step"):
            raise InputError("must be 'close' or 'step'", field="visible")
        self._validate({"id": trajectory_id, "states": [{"url": ""}], **fields})  # the id and fields, checked now
        with self._open_lock:
            if trajectory_id in self._open:
                raise InputError(
                    "is already open: append steps to it or close it", field="id", trajectory_id=trajectory_id
                )
            if self.store.row(trajectory_id) is not None:
                raise InputError(
                    "is already stored: a streamed trajectory needs a new id", field="id", trajectory_id=trajectory_id
                )
            self._open[trajectory_id] = OpenTrajectory(
                {k: v for k, v in fields.items() if v is not None}, visible=visible
            )
        return {"trajectory_id": trajectory_id, "states": 0, "open": True}

    def append_state(self, trajectory_id: str, state: dict) -> dict:
        """Add the next step; it is validated with the steps before it (nothing is kept when it is refused)."""
        unknown = sorted(set(state) - set(STATE_FIELDS) - {"state_index"})
        if unknown:
            raise InputError(
                f"unknown field(s) {', '.join(unknown)}; a step may have {', '.join(STATE_FIELDS)}",
                field="state",
                trajectory_id=trajectory_id,
            )
        with self._open_lock:
            run = self._open.get(trajectory_id)
            if run is None or run.closing:
                raise NotFound(
                    f'no open trajectory {trajectory_id!r}: open it first (POST /trajectories with "stream": true)'
                    if run is None
                    else f"trajectory {trajectory_id!r} is being closed: no more steps"
                )
            states = run.states + [{**state, "state_index": len(run.states)}]
            trajectory = self._validate({"id": trajectory_id, "states": states, **run.fields})
            run.states = states
        status = self._write(trajectory, replace=True) if run.visible == "step" else "open"
        return {"trajectory_id": trajectory_id, "states": len(states), "status": status}

    def close_trajectory(self, trajectory_id: str, *, outcome: str | None = None) -> dict:
        """Insert the streamed trajectory as one atomic insert: from now on queries see it. Atomic as a client sees
        it too: until this returns, a GET says it is open; once it has returned, it is stored and no longer open.
        When the insert fails, nothing is stored and it stays open (close it again); when only what follows the
        commit fails (the caches), it is closed all the same."""
        with self._open_lock:
            run = self._open.get(trajectory_id)
            if run is None or run.closing:
                raise NotFound(f"no open trajectory {trajectory_id!r}" + (" (it is being closed)" if run else ""))
            if not run.states:
                raise InputError(
                    "has no steps: append at least one before closing", field="states", trajectory_id=trajectory_id
                )
            fields = {**run.fields, **({"outcome": outcome} if outcome else {})}
            trajectory = self._validate({"id": trajectory_id, "states": run.states, **fields})
            run.closing = True  # no more steps; the write below runs without holding readers up
        try:
            status = self._write(trajectory, replace=run.visible == "step")
        except BaseException:
            if not self._stored_as(trajectory):
                with self._open_lock:
                    run.closing = False
                raise
            log.exception("trajectory %s was committed, but what follows the commit failed", trajectory_id)
            status = "inserted"
        with self._open_lock:
            del self._open[trajectory_id]
        return {"trajectory_id": trajectory_id, "states": len(run.states), "status": status}

    def _stored_as(self, trajectory) -> bool:
        """Whether the store holds exactly this trajectory (its insert committed)."""
        try:
            row = self.store.row(trajectory.id)
            return row is not None and row.fingerprint == fingerprint(trajectory)[0]
        except Exception:  # noqa: BLE001 - the store cannot say: the close is not taken as done
            return False

    def _validate(self, obj: Any):
        return trajectory_from_dict(
            obj, path="<request>", base_dir=self.screenshot_root, screenshot_root=self.screenshot_root
        )

    def _write(self, trajectory, *, replace: bool) -> str:
        if not self._writer.acquire(timeout=self.write_timeout):
            raise BusyError(f"another insert held the store for {self.write_timeout:.0f} s: retry later")
        try:
            if replace:
                from ..pools.build import insert_listener

                with self.store.writer() as writer:
                    writer.listeners.append(insert_listener(self.store))
                    return writer.insert(trajectory, replace=True).status
            return insert_with_pools(self.store, trajectory)
        finally:
            self._writer.release()

    # -- reads -------------------------------------------------------------------------------------------------
    def stats(self) -> dict:
        figures = self.store.stats()
        with self._open_lock:
            figures["open_trajectories"] = len(self._open)
        return figures

    def trajectory(self, trajectory_id: str) -> dict:
        """A stored trajectory's catalog row and one line per state, or an open one's steps so far (a trajectory
        streamed with visible='step' shows its stored steps, marked open). The open trajectories are looked at
        first: a close removes one only after its insert committed, so a trajectory being closed is open or stored,
        never neither."""
        with self._open_lock:
            run = self._open.get(trajectory_id)
            so_far = None
            if run is not None:
                so_far = {"id": trajectory_id, "open": True, **run.fields, "n_states": len(run.states)}
                if run.visible == "close":
                    return so_far
        found = self.store.load_committed(trajectory_id)
        if found is None:
            if so_far is not None:
                return so_far  # visible='step' before its first step was stored
            raise NotFound(f"no trajectory {trajectory_id!r} in the store")
        row, trajectory = found
        return {
            "id": row.id,
            "open": run is not None,
            "site": row.site,
            "goal": row.goal,
            "outcome": row.outcome,
            "n_states": row.n_states,
            "start_url": row.start_url,
            "states": [
                {
                    "state_index": s.index,
                    "url": s.url,
                    "timestamp": s.timestamp,
                    "action": s.action,
                    "action_error": s.action_error or "",
                }
                for s in trajectory.states
            ],
        }

    def state(self, trajectory_id: str, index: int) -> dict:
        """One stored state: its header fields and page text, with its provenance (of one committed version of
        the trajectory, whatever a writer replaces meanwhile)."""
        try:
            row, state = self.store.read_committed_state(trajectory_id, index)
        except StoreChanging:
            raise
        except StoreError as exc:
            if self.store.row(trajectory_id) is None:
                raise NotFound(f"no trajectory {trajectory_id!r} in the store") from exc
            raise
        if state is None:
            raise NotFound(f"trajectory {trajectory_id!r} has states 0..{row.n_states - 1}, not {index}")
        header, text = state
        return {
            "trajectory_id": trajectory_id,
            "state_index": index,
            "url": header.get("url", ""),
            "timestamp": header.get("time", ""),
            "header": header,
            "text": text,
            "path": state_relpath(row.dir, index),
        }

    def close(self) -> None:
        """Stop what the memories keep running (C's warm sandbox)."""
        for memory in self._memories.values():
            if hasattr(memory, "close"):
                memory.close()
        if self._no_shots is not None:
            self._no_shots.cleanup()
