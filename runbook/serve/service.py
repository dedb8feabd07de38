"""What the servers serve, in one place: queries, whole and streamed inserts, stats and reads over one store.

    service = MemoryService(".runbook")
    service.query("Where is the Bestsellers report?", budget=4000, method="r")      # the context as JSON
    service.open_trajectory("run-7", goal="Cancel order 305", site="shop")        # an agent starts a task
    service.append_state("run-7", {"url": ..., "accessibility_tree": ..., "action": ...})
    service.close_trajectory("run-7")                                              # visible to queries now

Readers never see a partial trajectory: a streamed one is validated step by step, journaled in the store
(runbook/store/journal.py: it outlives the server, so a restart, or a client that starts a server per call, goes
on where it was), and inserted as one atomic insert when it is closed (or, with `visible="step"`, re-inserted
whole after every step). A step sent without a time gets the server's receive time, and says so. One writer at a
time: another waits up to `write_timeout` seconds, then gets a BusyError. Method C's sandboxes are capped: at most
`max_sandboxes` C (or escalated auto) queries run at once, others wait up to `sandbox_wait` seconds.
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
from collections.abc import Callable
from typing import Any

from ..budget import DEFAULT_BUDGET, parse_budget
from ..context import Context
from ..core.layout import state_relpath
from ..core.statefile import header_time
from ..errors import BudgetError, ConfigError, ConflictError, InputError, StoreChanging, StoreError
from ..memory import DEFAULT_METHOD, IMAGE_METHODS, METHODS, get_memory
from ..pools.build import insert_listener
from ..store import Store
from ..store.journal import DEFAULT_MAX_AGE_S, Journal
from ..trajectory.model import Trajectory, trajectory_from_dict
from ..trajectory.times import now_iso
from .errors import BusyError, Gone, NotFound
from .provenance import RECEIVED, TIME_SOURCE, received_times, state_notes
from .step_inserts import StepInserts
from .streams import StreamedTrajectories

log = logging.getLogger(__name__)

__all__ = ["BusyError", "Gone", "MemoryService", "NotFound", "budget_tokens"]

SANDBOX_METHODS = frozenset({"c", "auto"})
"""Methods that may start a sandbox per query."""
DEFAULT_MAX_OPEN = 100
"""Open (streamed) trajectories a store's servers hold at once: 2,000 took 165 MB and made /stats take 1 s."""


class MemoryService(StreamedTrajectories):
    """Queries, inserts and reads over one store, safe to call from many threads and from several processes."""

    def __init__(
        self,
        store_path: str | os.PathLike,
        *,
        create: bool = False,
        screenshot_root: str | os.PathLike | None = None,
        max_sandboxes: int = 2,
        sandbox_wait: float = 60.0,
        write_timeout: float = 30.0,
        open_max_age_s: float = DEFAULT_MAX_AGE_S,
        max_open: int = DEFAULT_MAX_OPEN,
        memory_options: dict[str, Any] | None = None,
    ):
        if max_sandboxes < 1 or max_open < 1 or not open_max_age_s > 0:
            raise ConfigError("max_sandboxes and max_open must be at least 1, and open_max_age_s positive")
        self.store = Store(store_path, create=create)
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
        self.max_open = max_open
        self.journal = Journal(self.store.layout, max_age_s=open_max_age_s)
        self.journal.sweep()
        self.step_inserts = StepInserts(self._reinsert)
        self._catch_up()

    # -- queries -----------------------------------------------------------------------------------------------
    def query(self, question: str, *, budget: int | str | None = None, method: str | None = None, image=None) -> dict:
        """The context for `question` as JSON: analysis and items, each citing trajectory, state, url and time."""
        return self.to_json(self.query_context(question, budget=budget, method=method, image=image))

    def query_context(
        self, question: str, *, budget: int | str | None = None, method: str | None = None, image: str | None = None
    ) -> Context:
        """The Context for `question` (defaults: the library's method and budget)."""
        method = (method or DEFAULT_METHOD).lower()
        if method not in METHODS:
            raise InputError(f"unknown method {method!r}: choose one of {', '.join(sorted(METHODS))}", field="method")
        tokens = budget_tokens(DEFAULT_BUDGET if budget is None else budget)
        if image and method not in IMAGE_METHODS:
            raise InputError(
                f"method {method!r} does not look at images, so the image would be ignored: use "
                f"{' or '.join(sorted(IMAGE_METHODS))}, which compare it with the stored screenshots",
                field="image_base64",
            )
        if len(self.store) == 0:
            from ..query_input import check_query

            check_query(question, image)
            return Context(
                question=question,
                budget=tokens,
                method=method,
                analysis="The store is empty: no trajectory has been inserted or closed yet, so there is no evidence.",
                meta={"empty_store": True},
            )
        memory = self._memory(method)
        if method in SANDBOX_METHODS:
            if not self._sandboxes.acquire(timeout=self.sandbox_wait):
                raise BusyError(
                    f"every sandbox stayed busy for {self.sandbox_wait:.0f} s: retry later, or use "
                    f"method 'r', which needs none"
                )
            try:
                return memory.query(question, budget=tokens, image=image)
            finally:
                self._sandboxes.release()
        return memory.query(question, budget=tokens, image=image)

    def to_json(self, context: Context) -> dict:
        """The context as JSON, each item naming its state's screenshot and whether its time was received."""
        out = context.to_json()
        cited = [(item, index) for item in out["items"] if (index := _timed_state(item)) is not None]
        shots, received = state_notes(self.store, {(item["trajectory_id"], index) for item, index in cited})
        for item, index in cited:
            key = (item["trajectory_id"], index)
            if item.get("kind") in ("state", "span") and not item.get("screenshot") and key in shots:
                item["screenshot"] = shots[key]
                item["screenshot_in_context"] = False
            if key in received:
                item["timestamp_source"] = TIME_SOURCE
        return out

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
        """Insert one whole trajectory (the JSONL schema); states sent without a time get the receive time."""
        if not isinstance(obj, dict):
            raise InputError(f"must be a JSON object, got {type(obj).__name__}", field="body")
        states = obj.get("states")
        received: list[int] = []
        if isinstance(states, list):
            stamp = now_iso()
            stamped = []
            for pos, state in enumerate(states):
                if isinstance(state, dict) and not state.get("timestamp"):
                    state = {**state, "timestamp": stamp}
                    received.append(pos)
                stamped.append(state)
            obj = {**obj, "states": stamped, **({RECEIVED: received} if received else {})}
        trajectory = self._validate(obj)
        try:
            status = self._write(trajectory, replace=False)
        except ConflictError as exc:
            if received:
                raise _conflict(
                    f"{exc} (its states {received} were sent without a time and got this post's receive time: send "
                    "the times to make a post that is sent again unchanged)"
                ) from None
            raise
        return {
            "trajectory_id": trajectory.id,
            "status": status,
            "states": len(trajectory.states),
            **({"timestamps_received": received} if received else {}),
        }

    def _validate(self, obj: Any) -> Trajectory:
        if self._no_shots is not None:
            _refuse_screenshots(obj)
        return trajectory_from_dict(
            obj, path="<request>", base_dir=self.screenshot_root, screenshot_root=self.screenshot_root
        )

    def _write(
        self, trajectory: Trajectory | Callable[[], Trajectory | None], *, replace: bool, wait: bool = False
    ) -> str:
        """Insert `trajectory` (or what the callable returns, asked under the store's write lock; nothing when it
        returns None) with its pools. ConflictError when its id holds another trajectory and not `replace`.
        Waits up to `write_timeout` for the writer (BusyError), or as long as it takes with `wait`."""
        if not self._writer.acquire(timeout=-1 if wait else self.write_timeout):
            raise BusyError(f"another insert held the store for {self.write_timeout:.0f} s: retry later")
        try:
            with self.store.writer() as writer:
                chosen = trajectory() if callable(trajectory) else trajectory
                if chosen is None:
                    return "unchanged"
                writer.listeners.append(insert_listener(self.store))
                outcome = writer.insert(chosen, replace=replace)
        finally:
            self._writer.release()
        if outcome.status == "refused":
            raise _conflict(
                f"trajectory {chosen.id!r} is already stored with different content: a server never overwrites a "
                "stored trajectory, so send this one under a new id (`runbook insert --replace` overwrites it)"
            )
        return outcome.status

    def _catch_up(self) -> None:
        """Re-insert the open visible='step' trajectories whose stored version lags their journal (a server that
        stopped before its background re-insert ran)."""
        with self.journal.locked():
            runs = [run for run in self.journal.runs() if run.visible == "step" and run.steps]
        for run in runs:
            row = self.store.row(run.id)
            if row is None or row.n_states != len(run.steps):
                self.step_inserts.request(run.id)

    # -- reads -------------------------------------------------------------------------------------------------
    def stats(self) -> dict:
        figures = self.store.stats()
        figures["open_trajectories"] = len(self.journal.ids())
        return figures

    def trajectory(self, trajectory_id: str) -> dict:
        """A stored trajectory's catalog row and one line per state (of one committed version, whatever a writer
        replaces meanwhile), or an open one's steps so far. The journal is read first: a close removes the open
        trajectory only after its insert committed, so one being closed is open or stored, never neither (read the
        other way round, a close in between answered 404). One streamed with visible='step' shows its stored
        steps, marked open."""
        run = self._run_or_none(trajectory_id)
        found = self.store.load_committed(trajectory_id) if run is None or run.visible == "step" else None
        if found is None and run is not None:
            opened = {"id": trajectory_id, "open": True, "visible": run.visible, "opened": run.opened}
            return {**opened, "last_step": run.touched, **run.fields, "n_states": len(run.steps)}
        if found is None:
            raise NotFound(f"no trajectory {trajectory_id!r} in the store")
        row, trajectory = found
        shots, received_keys = state_notes(self.store, {(trajectory_id, s.index) for s in trajectory.states})
        received = {i for _, i in received_keys}
        return {
            "id": row.id,
            "open": run is not None,  # streamed with visible='step': stored after every step, and still open
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
                    **({"timestamp_source": TIME_SOURCE} if s.index in received else {}),
                    "action": s.action,
                    "action_error": s.action_error or "",
                    "screenshot": shots.get((trajectory_id, s.index)),
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
            "timestamp": header_time(header),
            **({"timestamp_source": TIME_SOURCE} if index in self._received(trajectory_id) else {}),
            "screenshot": self._screenshot(trajectory_id, index),
            "header": header,
            "text": text,
            "path": state_relpath(row.dir, index),
        }

    def screenshot(self, trajectory_id: str, index: int) -> tuple[bytes, str]:
        """(bytes, media type) of a stored state's screenshot; NotFound when it has none."""
        rel = self.state(trajectory_id, index)["screenshot"]
        if not rel:
            raise NotFound(f"state {index} of trajectory {trajectory_id!r} has no screenshot")
        data = self.store.layout.read_bytes(rel)
        suffix = os.path.splitext(rel)[1].lower()
        return data, {".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".webp": "image/webp"}.get(suffix, "image/png")

    def _screenshot(self, trajectory_id: str, index: int) -> str | None:
        """The store-relative path of a stored state's screenshot, or None."""
        return state_notes(self.store, {(trajectory_id, index)})[0].get((trajectory_id, index))

    def _received(self, trajectory_id: str) -> frozenset[int]:
        row = self.store.row(trajectory_id)
        return received_times(self.store, trajectory_id, row.fingerprint) if row is not None else frozenset()

    def settle(self, timeout: float | None = None) -> bool:
        """Wait until the background re-inserts of visible='step' trajectories asked for so far are written."""
        return self.step_inserts.settle(timeout)

    def close(self) -> None:
        """Write what the background re-inserts still have to, and stop what the memories keep running (C's warm
        sandbox)."""
        if not self.settle(self.write_timeout):
            log.warning("stopped before every visible='step' trajectory was re-inserted: their steps stay journaled")
        for memory in self._memories.values():
            if hasattr(memory, "close"):
                memory.close()
        if self._no_shots is not None:
            self._no_shots.cleanup()


def _conflict(message: str) -> ConflictError:
    """A ConflictError naming the field at fault (the id), as the servers report it (409)."""
    conflict = ConflictError(message)
    conflict.field = "id"  # type: ignore[attr-defined]
    return conflict


def _refuse_screenshots(obj: Any) -> None:
    """Without --screenshot-root a server takes no screenshot: say so, instead of naming a folder of its own."""
    states = obj.get("states") if isinstance(obj, dict) else None
    for pos, state in enumerate(states if isinstance(states, list) else []):
        if isinstance(state, dict) and state.get("screenshot"):
            raise InputError(
                "this server takes no screenshots: it was started without --screenshot-root DIR (screenshot paths "
                "must lie inside that folder); send the step without it, or restart the server with that option",
                field=f"states[{pos}].screenshot",
                trajectory_id=obj.get("id") if isinstance(obj.get("id"), str) else None,
            )


def budget_tokens(value: int | str) -> int:
    """A budget as tokens; InputError on field 'budget' when it is not a positive count."""
    try:
        return parse_budget(value)
    except BudgetError as exc:
        raise InputError(str(exc), field="budget") from exc


def _timed_state(item: dict) -> int | None:
    """The state whose time an item carries: its own; a span's (C) first; a note's or an event's (R) last."""
    if not item.get("trajectory_id"):
        return None
    if item.get("state_index") is not None:
        return item["state_index"]
    return item.get("start_state_index" if item.get("kind") == "span" else "end_state_index")
