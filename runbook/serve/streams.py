"""Trajectories an agent streams step by step: opened, each step validated with the ones before it and journaled
in the store before it is acknowledged (runbook/store/journal.py), then closed as one atomic insert (or, with
`visible="step"`, re-inserted whole after every step). MemoryService serves them; this is its part that speaks to
the journal.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from ..errors import InputError
from ..store import Store
from ..store.journal import Expired, Journal, NotOpen, OpenRun
from ..store.staging import fingerprint
from ..trajectory.model import Trajectory
from ..trajectory.steps import read_step
from ..trajectory.times import now_iso
from .errors import BusyError, Gone, NotFound
from .provenance import RECEIVED, TIME_SOURCE, step_error
from .step_inserts import StepInserts

log = logging.getLogger(__name__)

VISIBILITY = ("close", "step")


class StreamedTrajectories:
    """Open, append and close over the store's journal; MemoryService supplies the store, validation and writes."""

    store: Store
    journal: Journal

    max_open: int
    step_inserts: StepInserts

    def _validate(self, obj: Any) -> Trajectory:
        raise NotImplementedError

    def _write(
        self, trajectory: Trajectory | Callable[[], Trajectory | None], *, replace: bool, wait: bool = False
    ) -> str:
        raise NotImplementedError

    def open_trajectory(self, trajectory_id: str, *, visible: str = "close", **fields: Any) -> dict:
        """Start a trajectory an agent streams step by step (goal, site, start_url, outcome, ... as `fields`)."""
        if visible not in VISIBILITY:
            raise InputError("must be 'close' or 'step'", field="visible")
        fields = {k: v for k, v in fields.items() if v is not None}
        self._validate({"id": trajectory_id, "states": [{"url": ""}], **fields})  # the id and fields, checked now
        with self.journal.locked():
            if self._is_open(trajectory_id):
                raise InputError(
                    "is already open: append steps to it or close it", field="id", trajectory_id=trajectory_id
                )
            if self.store.row(trajectory_id) is not None:
                raise InputError(
                    "is already stored: a streamed trajectory needs a new id", field="id", trajectory_id=trajectory_id
                )
            self._check_room()
            run = self.journal.create(trajectory_id, fields, visible=visible)
        return {"trajectory_id": trajectory_id, "states": 0, "open": True, "visible": visible, "opened": run.opened}

    def _check_room(self) -> None:
        """BusyError when `max_open` trajectories are open (expired ones are discarded first)."""
        if self.journal.count() >= self.max_open:
            self.journal.sweep()
            if self.journal.count() >= self.max_open:
                raise BusyError(
                    f"{self.max_open} trajectories are open, the server's limit (--max-open): close one first, or "
                    f"wait until one goes {self.journal.age_text()} without a step and is discarded"
                )

    def append_state(self, trajectory_id: str, state: Any) -> dict:
        """Add the next step (in runbook's, BrowserGym's, AgentLab's or browser-use's shape); it is validated with
        the steps before it, journaled, and only then acknowledged. Nothing is kept when it is refused. With
        visible='step', the trajectory is re-inserted in the background (StepInserts)."""
        step = read_step(state)
        fields = dict(step.fields)
        given_index = fields.pop("state_index", None)
        with self.journal.locked():
            run = self._run(trajectory_id, steps=True)
            _check_index(given_index, len(run.steps), trajectory_id)
            received = not fields.get("timestamp")
            if received:
                fields["timestamp"] = now_iso()
            steps = [dict(s) for s in run.steps]
            if step.previous_error and steps and not steps[-1].get("action_error"):
                steps[-1]["action_error"] = step.previous_error
            steps.append({**fields, "state_index": len(steps)})
            marks = run.received + ([len(steps) - 1] if received else [])
            try:
                trajectory = self._validate(self._record(run, steps, marks))
            except InputError as exc:
                raise step_error(exc, len(steps) - 1, received=received, trajectory_id=trajectory_id) from exc
            amend = {"action_error": steps[-2]["action_error"]} if step.previous_error and len(steps) > 1 else None
            self.journal.append(run, steps[-1], received=received, amend_previous=amend)
        if run.visible == "step":
            self.step_inserts.request(trajectory_id)
        out = {
            "trajectory_id": trajectory_id,
            "states": len(run.steps),
            "state_index": len(run.steps) - 1,
            "timestamp": trajectory.states[-1].timestamp,
            "status": "open",
        }
        if received:
            out["timestamp_source"] = TIME_SOURCE
        return out

    def _reinsert(self, trajectory_id: str) -> None:
        """Write an open visible='step' trajectory's journaled steps to the store (StepInserts calls it). The
        journal is read under the store's write lock, so this writes the newest steps, and never after a close
        (which marks the trajectory closing, then takes the same lock) has written the whole trajectory."""

        def newest() -> Trajectory | None:
            with self.journal.locked():
                try:
                    run = self.journal.get(trajectory_id)
                except NotOpen:
                    return None
                return self._trajectory(run) if run.steps and not run.closing and run.visible == "step" else None

        self._write(newest, replace=True, wait=True)

    def close_trajectory(self, trajectory_id: str, *, outcome: str | None = None) -> dict:
        """Insert the streamed trajectory as one atomic insert: from now on queries see it. Atomic as a client sees
        it too: until this returns, a GET says it is open; once it has returned, it is stored and no longer open.
        The write holds no reader up (the journal only marks it closing: no more steps). When the insert fails,
        nothing is stored and it stays open (close it again); when only what follows the commit fails (the caches),
        it is closed all the same."""
        with self.journal.locked():
            run = self._run(trajectory_id, steps=True)
            if not run.steps:
                raise InputError(
                    "has no steps: append at least one before closing", field="states", trajectory_id=trajectory_id
                )
            if outcome:
                run.fields["outcome"] = outcome
            trajectory = self._trajectory(run)
            self.journal.mark_closing(trajectory_id)
        try:
            status = self._write(trajectory, replace=run.visible == "step")
        except BaseException:
            if not self._stored_as(trajectory):
                self.journal.unmark_closing(trajectory_id)
                raise
            log.exception("trajectory %s was committed, but what follows the commit failed", trajectory_id)
            status = "inserted"
        self.journal.remove(trajectory_id)
        return {"trajectory_id": trajectory_id, "states": len(run.steps), "status": status}

    def _stored_as(self, trajectory: Trajectory) -> bool:
        """Whether the store holds exactly this trajectory (its insert committed)."""
        try:
            row = self.store.row(trajectory.id)
            return row is not None and row.fingerprint == fingerprint(trajectory)[0]
        except Exception:  # noqa: BLE001 - the store cannot say: the close is not taken as done
            return False

    def _is_open(self, trajectory_id: str) -> bool:
        try:
            self.journal.get(trajectory_id)
        except NotOpen:
            return False
        return True

    def _run(self, trajectory_id: str, *, steps: bool = False) -> OpenRun:
        """The open trajectory; with `steps`, one that takes steps (or a close): not one being closed."""
        try:
            run = self.journal.get(trajectory_id)
        except Expired as exc:
            raise Gone(str(exc)) from exc
        except NotOpen:
            stored = self.store.row(trajectory_id) is not None
            raise NotFound(
                f"no open trajectory {trajectory_id!r}"
                + (
                    ": it is stored (closed) already"
                    if stored
                    else ': open it first (MCP: the open_trajectory tool; HTTP: POST /trajectories with "stream": true)'
                )
            ) from None
        if steps and run.closing:
            raise NotFound(f"trajectory {trajectory_id!r} is being closed: no more steps, no second close")
        return run

    @staticmethod
    def _record(run: OpenRun, steps: list[dict[str, Any]], received: list[int]) -> dict[str, Any]:
        return {"id": run.id, "states": steps, **run.fields, **({RECEIVED: received} if received else {})}

    def _trajectory(self, run: OpenRun) -> Trajectory:
        return self._validate(self._record(run, run.steps, run.received))

    def _run_or_none(self, trajectory_id: str) -> OpenRun | None:
        try:
            return self._run(trajectory_id)
        except NotFound:
            return None


def _check_index(given: Any, expected: int, trajectory_id: str) -> None:
    """A step's `state_index`, when it has one, must be the next index: a step sent twice, or one skipped, is
    refused rather than stored in another place (steps posted as 0, 5, 1, 0 were stored as 0-3)."""
    if given is None:
        return
    if isinstance(given, bool) or not isinstance(given, int) or given != expected:
        raise InputError(
            f"is {given!r}, expected {expected}: a step's state_index must be the next index (the trajectory has "
            f"{expected} step{'s' if expected != 1 else ''}); leave it out to append the step as the next one",
            field="state_index",
            trajectory_id=trajectory_id,
        )
