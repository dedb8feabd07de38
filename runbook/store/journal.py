"""Open trajectories: what an agent has streamed so far, journaled in the store until it is closed.

    <store>/.open/<id>/meta.json      {"id", "fields", "visible", "opened", "touched"}
    <store>/.open/<id>/steps.jsonl    one line per accepted step, appended and synced before it is acknowledged
    <store>/.open/<id>/closing        while a close writes it: the closing process's id (no more steps meanwhile)

The journal is not part of the stored trajectories: no query, summary or pool reads it, and its folder is private
to the server's user. A server that restarts (or a client that starts one per call) finds every open trajectory
where it was. Every reader and writer holds `.open/.lock`, so several server processes over one store take turns.
A trajectory without a step for longer than the age limit is discarded, and whoever asks for it is told so.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from ..core.layout import trajectory_dirname
from ..errors import Expired, NotOpen, RunbookError
from ..trajectory.times import now_iso, parse_time
from .layout import Layout

log = logging.getLogger(__name__)

OPEN_DIR = ".open"
META = "meta.json"
STEPS = "steps.jsonl"
CLOSING = "closing"
DEFAULT_MAX_AGE_S = 24 * 3600.0
"""An open trajectory with no step for this long is discarded."""
_WRITE = os.O_WRONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


@dataclass
class OpenRun:
    """A trajectory an agent is still writing: its fields and the steps accepted so far."""

    id: str
    fields: dict[str, Any]
    visible: str = "close"
    """'close': inserted when closed; 'step': re-inserted after every step."""
    opened: str = ""
    touched: str = ""
    """When the last step (or the opening) was accepted."""
    steps: list[dict[str, Any]] = field(default_factory=list)
    received: list[int] = field(default_factory=list)
    """Positions of the steps whose time is the server's receive time."""
    closing: bool = False
    """A close is writing it (in a live process): no more steps, no second close."""


class Journal:
    """The store's open trajectories; every method takes the journal's lock (threads and processes)."""

    def __init__(self, layout: Layout, *, max_age_s: float = DEFAULT_MAX_AGE_S):
        self.layout = layout
        self.max_age = timedelta(seconds=max_age_s)
        self.root = layout.root / OPEN_DIR
        self._thread_lock = threading.RLock()
        self._depth = 0

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the journal's lock (re-entrant within a thread) for a read-check-write sequence."""
        with self._thread_lock:
            if self._depth:
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            self.root.mkdir(mode=0o700, exist_ok=True)
            with open(self.root / ".lock", "a+") as fh:
                fcntl.flock(fh, fcntl.LOCK_EX)
                self._depth = 1
                try:
                    yield
                finally:
                    self._depth = 0
                    fcntl.flock(fh, fcntl.LOCK_UN)

    # -- reading -------------------------------------------------------------------------------------------------
    def ids(self) -> list[str]:
        """The ids of the open trajectories that have not expired."""
        with self.locked():
            self.sweep()
            return [run.id for run in self._all()]

    def get(self, trajectory_id: str) -> OpenRun:
        """The open trajectory, with its steps; NotOpen (or Expired) otherwise."""
        with self.locked():
            run = self._read(trajectory_id)
            if run is None:
                raise NotOpen(f"no open trajectory {trajectory_id!r}")
            if self._expired(run):
                self._discard(run)
                raise Expired(
                    f"open trajectory {trajectory_id!r} had no step since {run.touched} (more than "
                    f"{self.age_text()}) and was discarded: open it again and resend its steps"
                )
            return run

    def runs(self) -> list[OpenRun]:
        """The open trajectories that have not expired, with their steps."""
        with self.locked():
            return self._all()

    def count(self) -> int:
        """Open trajectories, expired ones included (without reading them)."""
        with self.locked():
            return sum(1 for entry in os.listdir(self.root) if not entry.startswith(".")) if self.root.is_dir() else 0

    def exists(self, trajectory_id: str) -> bool:
        with self.locked():
            return self._read(trajectory_id) is not None

    # -- writing -------------------------------------------------------------------------------------------------
    def create(self, trajectory_id: str, fields: dict[str, Any], *, visible: str) -> OpenRun:
        with self.locked():
            folder = self._folder(trajectory_id)
            if folder.exists():
                shutil.rmtree(folder)  # an expired leftover: the caller checked for a live one
            tmp = self.root / f".tmp-{folder.name}"
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(mode=0o700)
            stamp = now_iso()
            run = OpenRun(trajectory_id, fields, visible=visible, opened=stamp, touched=stamp)
            meta = {"id": trajectory_id, "fields": fields, "visible": visible, "opened": stamp, "touched": stamp}
            _write_new(tmp / META, orjson.dumps(meta))
            _write_new(tmp / STEPS, b"")
            os.replace(tmp, folder)
            return run

    def append(
        self, run: OpenRun, step: dict[str, Any], *, received: bool, amend_previous: dict[str, Any] | None = None
    ) -> None:
        """Add `step` to `run`'s journal (and `amend_previous`'s fields to the step before it), synced to disk
        before this returns."""
        with self.locked():
            at = now_iso()
            record = {"state": step, "received": received, "at": at}
            if amend_previous:
                record["amend_previous"] = amend_previous
            fd = os.open(self._folder(run.id) / STEPS, _WRITE | os.O_APPEND)
            try:
                _write_all(fd, orjson.dumps(record) + b"\n")
                os.fsync(fd)
            finally:
                os.close(fd)
            if amend_previous and run.steps:
                run.steps[-1] = {**run.steps[-1], **amend_previous}
            run.steps.append(step)
            run.touched = at
            if received:
                run.received.append(len(run.steps) - 1)

    def mark_closing(self, trajectory_id: str) -> None:
        """Mark the trajectory as being closed by this process: a close writes it without holding the lock, and no
        step may be acknowledged meanwhile (it would be lost with the journal). A marker whose process is gone (a
        server that died mid-close) is ignored."""
        with self.locked():
            (self._folder(trajectory_id) / CLOSING).unlink(missing_ok=True)  # a dead close's, or unreadable
            _write_new(self._folder(trajectory_id) / CLOSING, str(os.getpid()).encode())

    def unmark_closing(self, trajectory_id: str) -> None:
        """The close failed before its commit: the trajectory takes steps and closes again."""
        with self.locked():
            (self._folder(trajectory_id) / CLOSING).unlink(missing_ok=True)

    def remove(self, trajectory_id: str) -> None:
        with self.locked():
            self._remove(trajectory_id)

    def sweep(self) -> list[str]:
        """Discard every expired open trajectory (each with a warning); their ids."""
        gone = []
        with self.locked():
            for run in self._all(include_expired=True):
                if self._expired(run):
                    self._discard(run)
                    gone.append(run.id)
        return gone

    # -- inside the lock -------------------------------------------------------------------------------------------
    def _folder(self, trajectory_id: str) -> Path:
        return self.root / trajectory_dirname(trajectory_id)

    def _all(self, *, include_expired: bool = False) -> list[OpenRun]:
        runs: list[OpenRun] = []
        if not self.root.is_dir():
            return runs
        for entry in sorted(os.listdir(self.root)):
            if entry.startswith("."):
                continue
            run = self._read_folder(entry)
            if run is not None and (include_expired or not self._expired(run)):
                runs.append(run)
        return runs

    def _read(self, trajectory_id: str) -> OpenRun | None:
        run = self._read_folder(trajectory_dirname(trajectory_id))
        return run if run is not None and run.id == trajectory_id else None

    def _read_folder(self, name: str) -> OpenRun | None:
        base = f"{OPEN_DIR}/{name}"
        try:
            meta = orjson.loads(self.layout.read_bytes(f"{base}/{META}"))
            raw = self.layout.read_bytes(f"{base}/{STEPS}")
        except FileNotFoundError:
            return None
        except (RunbookError, orjson.JSONDecodeError) as exc:
            log.warning("open trajectory folder %s is unreadable, left alone: %s", base, exc)
            return None
        run = OpenRun(
            meta["id"], meta.get("fields") or {}, meta.get("visible", "close"), meta["opened"], meta["touched"]
        )
        run.closing = self._closing(name)
        lines = raw.split(b"\n")
        if lines and lines[-1]:  # a step cut short by a crash was never acknowledged: dropped
            self._truncate(name, len(raw) - len(lines[-1]))
        for line in lines[:-1]:
            record = orjson.loads(line)
            if record.get("amend_previous") and run.steps:
                run.steps[-1] = {**run.steps[-1], **record["amend_previous"]}
            run.steps.append(record["state"])
            run.touched = record.get("at") or run.touched
            if record.get("received"):
                run.received.append(len(run.steps) - 1)
        return run

    def _closing(self, name: str) -> bool:
        try:
            pid = int(self.layout.read_bytes(f"{OPEN_DIR}/{name}/{CLOSING}"))
        except FileNotFoundError:
            return False
        except (RunbookError, ValueError):
            return False  # unreadable: not a live close's marker
        if pid == os.getpid():
            return True
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            (self.root / name / CLOSING).unlink(missing_ok=True)  # its close died with its process
            return False
        except PermissionError:
            return True  # alive, another user's
        return True

    def _truncate(self, name: str, size: int) -> None:
        fd = os.open(self.root / name / STEPS, _WRITE)
        try:
            os.ftruncate(fd, size)
        finally:
            os.close(fd)

    def _expired(self, run: OpenRun) -> bool:
        touched = parse_time(run.touched)
        return touched is not None and datetime.now(UTC) - touched > self.max_age

    def age_text(self) -> str:
        hours = self.max_age.total_seconds() / 3600
        return f"{hours:g} h" if hours >= 1 else f"{self.max_age.total_seconds():g} s"

    def _discard(self, run: OpenRun) -> None:
        """Remove an expired trajectory, with the warning the README promises (found by a sweep or by a step)."""
        log.warning(
            "discarded open trajectory %r: no step since %s (age limit %s)", run.id, run.touched, self.age_text()
        )
        self._remove(run.id)

    def _remove(self, trajectory_id: str) -> None:
        folder = self._folder(trajectory_id)
        if folder.is_dir() and not folder.is_symlink():
            shutil.rmtree(folder)
        elif folder.is_symlink():
            folder.unlink()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _write_new(path: Path, data: bytes) -> None:
    fd = os.open(path, _WRITE | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        _write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
