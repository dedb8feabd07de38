"""Where a served answer's items come from, beyond what the context says: each state's screenshot in the store, and
whether its time is the server's receive time (a step sent without one). Also the wording of a refused step."""

from __future__ import annotations

import functools
from contextlib import closing

from ..errors import InputError
from ..store import Store

RECEIVED = "received_times"
"""A stored trajectory's field: the states whose time is the server's receive time (none was sent)."""
TIME_SOURCE = "server receive time (the step was sent without one)"


def state_notes(store: Store, keys: set[tuple[str, int]]) -> tuple[dict[tuple[str, int], str], set[tuple[str, int]]]:
    """For stored (trajectory, state) keys: their screenshots' store paths, and which have the server's receive time
    (one catalog read for all of them)."""
    ids = sorted({tid for tid, _ in keys})
    if not ids:
        return {}, set()
    marks = ",".join("?" * len(ids))
    with closing(store.connect()) as conn:
        rows = conn.execute(f"SELECT id, dir, fingerprint FROM trajectories WHERE id IN ({marks})", ids).fetchall()
        found = conn.execute(
            f"SELECT trajectory_id, state_index, screenshot FROM states WHERE trajectory_id IN ({marks}) "
            "AND screenshot IS NOT NULL AND screenshot != ''",
            ids,
        ).fetchall()
    folders = {tid: store.layout.relative(store.layout.trajectory_dir(d)) for tid, d, _ in rows}
    shots = {(tid, i): f"{folders[tid]}/{shot}" for tid, i, shot in found if (tid, i) in keys and tid in folders}
    received = {
        (tid, i) for tid, _, fingerprint in rows for i in received_times(store, tid, fingerprint) if (tid, i) in keys
    }
    return shots, received


@functools.lru_cache(maxsize=4096)
def received_times(store: Store, trajectory_id: str, fingerprint: str) -> frozenset[int]:
    """The states of a stored trajectory whose time is the server's receive time (cached per content)."""
    marks = store.load(trajectory_id).extra.get(RECEIVED) or []
    return frozenset(n for n in marks if isinstance(n, int))


def step_error(exc: InputError, index: int, *, received: bool, trajectory_id: str) -> InputError:
    """A refused step's error, naming the field of the step (not of the whole trajectory it was checked in)."""
    prefix = f"states[{index}]."
    if not (exc.field or "").startswith(prefix):
        return exc
    name = (exc.field or "")[len(prefix) :]
    reason = exc.reason
    if received and name == "timestamp":
        reason = (
            f"none was sent, and the server's receive time is earlier than the previous step's time ({reason}): "
            f"send every step's timestamp, or none"
        )
    return InputError(f"step {index}: {reason}", field=name, trajectory_id=trajectory_id)
