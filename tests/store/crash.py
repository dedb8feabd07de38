"""Run a store operation in a forked child that kills itself with SIGKILL at a chosen point: the k-th file system
or catalog call it makes (os.replace, rename, unlink, mkdir, rmdir, open, write, fsync, ftruncate, io.open, and
the catalog connection's execute, commit and transaction exit). The child reports what it committed through a pipe
before the next call can kill it, so a test knows what was committed before the kill."""

from __future__ import annotations

import builtins
import functools
import io
import os
import signal
import sqlite3
from collections.abc import Callable

import orjson

COUNTED_OS = ("replace", "rename", "unlink", "rmdir", "mkdir", "open", "write", "fsync", "ftruncate")


def arm(target: int | None, report_fd: int) -> list[int]:
    """In the child: count every call that changes or reads the store's files or its catalog; SIGKILL at the
    `target`-th. Returns the counter (its total is reported when the run ends unkilled)."""
    count = [0]
    write = os.write

    def hit() -> None:
        count[0] += 1
        if count[0] == target:
            os.kill(os.getpid(), signal.SIGKILL)

    def counted(original: Callable) -> Callable:
        @functools.wraps(original)
        def call(*args, **kwargs):
            hit()
            return original(*args, **kwargs)

        return call

    for name in COUNTED_OS:
        setattr(os, name, counted(getattr(os, name)))
    io.open = builtins.open = counted(io.open)

    class CountingConnection(sqlite3.Connection):
        def execute(self, *args, **kwargs):
            hit()
            return super().execute(*args, **kwargs)

        def executemany(self, *args, **kwargs):
            hit()
            return super().executemany(*args, **kwargs)

        def commit(self):
            hit()
            super().commit()
            hit()

        def __exit__(self, *exc):
            hit()
            result = super().__exit__(*exc)
            hit()
            return result

    sqlite3.connect = functools.partial(sqlite3.connect, factory=CountingConnection)  # type: ignore[assignment]
    # what the child committed, said before the next call can kill it
    os.environ["RUNBOOK_TEST_REPORT_FD"] = str(report_fd)
    report.write = write  # type: ignore[attr-defined]
    return count


def report(line: dict) -> None:
    fd = int(os.environ["RUNBOOK_TEST_REPORT_FD"])
    report.write(fd, orjson.dumps(line) + b"\n")  # type: ignore[attr-defined]


def run_in_child(operation: Callable[[], None], target: int | None) -> tuple[bool, int, list[dict]]:
    """(killed, calls counted when it ran to the end, the commits it reported)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 3
        try:
            os.close(read_end)
            count = arm(target, write_end)
            operation()
            report({"calls": count[0]})
            code = 0
        except BaseException as exc:  # noqa: BLE001 - reported to the parent, which fails the test
            os.write(write_end, orjson.dumps({"error": repr(exc)}) + b"\n")
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as fh:
        lines = [orjson.loads(line) for line in fh.read().splitlines()]
    _, status = os.waitpid(pid, 0)
    errors = [line["error"] for line in lines if "error" in line]
    assert not errors, errors
    killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    assert killed or os.WEXITSTATUS(status) == 0, status
    calls = next((line["calls"] for line in lines if "calls" in line), 0)
    return killed, calls, [line for line in lines if "commit" in line]


def report_commits() -> None:
    """In the child: report every commit the store writer finished (its id and fingerprint)."""
    from runbook.store import writer as store_module

    commit = store_module.StoreWriter.commit

    def reported(self, staged, **kwargs):
        outcome = commit(self, staged, **kwargs)
        if outcome.status in ("inserted", "replaced"):
            report({"commit": outcome.trajectory_id, "fingerprint": staged.fingerprint})
        return outcome

    store_module.StoreWriter.commit = reported  # type: ignore[method-assign]


def die() -> None:
    """SIGKILL this process now (in the child: the point a test chose)."""
    os.kill(os.getpid(), signal.SIGKILL)
