"""What every sandbox backend shares: its limits, the result of one call, and the `Sandbox` protocol."""

from __future__ import annotations

import math
import shlex
import threading
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Protocol, runtime_checkable

from ..errors import SandboxError

MAX_CALL_TIMEOUT = 86_400.0
"""Seconds one call may be given (a day); past ~24.8 days the timeout overflowed poll()'s milliseconds."""
STORE_MOUNT = "/store"
"""Where the store appears inside docker and bwrap sandboxes; tools read it from env RUNBOOK_STORE_DIR."""
SCRATCH_MOUNT = "/scratch"
"""The one writable folder a query's tool calls share (the working directory of every call)."""
TOOLS_MOUNT = "/opt/runbook/tools"
"""Where the sandbox programs (runbook/sandbox/programs) appear inside the sandbox: on PATH and PYTHONPATH."""
LIBRARY_MOUNT = "/opt/runbook/lib"
"""On PYTHONPATH inside the sandbox: `runbook/core` (runbook's core library) and nothing else of the package."""
CORE_MOUNT = f"{LIBRARY_MOUNT}/runbook/core"


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits for one query's sandbox."""

    memory_mb: int = 512
    """Memory for the sandbox: all processes together (bwrap without a cgroup: address space per process)."""
    pids: int = 128
    """Processes and threads at once; stops fork bombs."""
    cpus: float = 2.0
    """CPU cores the sandbox may use (docker only; at most the engine host's). Two, because ripgrep searches files
    in parallel: the offline planner's scan of 928 trajectories took 0.26 s of ripgrep on one core, 0.11 s on two."""
    scratch_mb: int = 64
    """Size of the writable /scratch and /tmp."""
    output_bytes: int = 64_000
    """Bytes of output one call returns; the rest is cut and counted."""
    lifetime_s: float = 3600.0
    """A sandbox whose owner died without cleaning up ends itself after this long."""

    @classmethod
    def from_kwargs(cls, **limits: float) -> SandboxLimits:
        """Build limits from keyword arguments, naming any unknown one."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(limits) - known)
        if unknown:
            raise SandboxError(f"unknown sandbox limit(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        return cls(**limits)  # type: ignore[arg-type]

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class ExecResult:
    """What one command run in a sandbox gave back."""

    exit_code: int
    """The command's exit code; 137 when it was killed (timeout, memory)."""
    output: str
    """stdout and stderr interleaved, cut to the output limit, with a note when cut or timed out."""
    truncated: bool
    """True when output was cut; `cut_bytes` says by how much."""
    timed_out: bool
    """True when the call's timeout killed the command."""
    seconds: float
    """Wall time of the call as seen by the caller."""
    cut_bytes: int = 0
    """Bytes of output not returned (a lower bound when the command was stopped for writing too much)."""

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


@runtime_checkable
class Sandbox(Protocol):
    """Runs one query's tool calls in isolation: start once, exec many times, stop at the end."""

    name: str
    store_path: Path
    limits: SandboxLimits

    def start(self) -> Sandbox: ...

    def exec(self, cmd: list[str] | str, *, timeout: float, stdin: str | None = None) -> ExecResult: ...

    def stop(self) -> None: ...

    def __enter__(self) -> Sandbox: ...

    def __exit__(self, *exc: object) -> None: ...


def wrapper_claims(limits: SandboxLimits) -> dict[str, tuple[bool, str]]:
    """The limits runbook's wrapper inside the sandbox (inside.py) keeps wherever it runs as the sandbox's init,
    docker and bwrap alike, in the form `enforcement()` returns them."""
    return {
        "timeout": (True, "the wrapper kills the call at its timeout"),
        "output": (True, f"{limits.output_bytes:,} bytes per call, cut inside"),
        "trailer": (True, "a per-call nonce the command cannot read (the wrapper is non-dumpable)"),
        "scratch": (True, f"tmpfs /scratch and /tmp, {limits.scratch_mb} MB each, kept for the query"),
    }


def as_argv(cmd: list[str] | str) -> list[str]:
    """A list runs as is; a string runs through bash so pipes and globs work like in a terminal."""
    if isinstance(cmd, str):
        argv = ["bash", "-c", cmd]
    elif not cmd or not all(isinstance(part, str) for part in cmd):
        raise SandboxError(f"a sandbox command must be a non-empty list of strings or one string, got {cmd!r}")
    else:
        argv = list(cmd)
    for n, part in enumerate(argv):
        if "\0" in part:  # exec() cannot pass it: the kernel ends every argument at the first NUL
            raise SandboxError(
                f"argument {n} of the command ({part[:40]!r}...) contains a NUL byte (\\0), which no "
                f"program can receive; remove it (a regex matches it as \\x00)"
            )
    return argv


def check_stdin(stdin: str | None) -> None:
    if stdin is not None and "\0" in stdin:
        raise SandboxError(
            "stdin contains a NUL byte (\\0); remove it, or write binary data to a file under "
            "/scratch in one call and read it in the next"
        )


def describe(cmd: list[str] | str) -> str:
    return cmd if isinstance(cmd, str) else shlex.join(cmd)


class SandboxBase:
    """Shared plumbing: store path checks, context manager, and registration for cleanup at exit or on a signal."""

    name = "base"

    def __init__(self, store_path: str | Path, limits: SandboxLimits | None = None):
        self.store_path = Path(store_path).expanduser().resolve()
        self.limits = limits or SandboxLimits()
        self._started = False
        self._calls = threading.Lock()
        """One call at a time: a call's end kills every process the sandbox user runs, another call's included."""

    def check_store(self) -> None:
        if not self.store_path.is_dir():
            raise SandboxError(
                f"the store {self.store_path} does not exist; create it with `runbook insert PATH` or pass --store DIR"
            )

    def start(self) -> SandboxBase:
        from .cleanup import register  # here, not at import: the registry installs signal handlers lazily

        if self._started:
            return self
        self.check_store()
        register(self)
        try:
            self._start()
        except BaseException:
            try:
                self.stop()
            except Exception:
                pass  # the start error is the one to report
            raise
        self._started = True
        return self

    def stop(self) -> None:
        """Idempotent. A sandbox whose stop was interrupted stays registered, so the exit hook tries again."""
        from .cleanup import unregister

        self._stop()
        self._started = False
        unregister(self)

    def exec(self, cmd: list[str] | str, *, timeout: float, stdin: str | None = None) -> ExecResult:
        if not self._started:
            raise SandboxError(f"the {self.name} sandbox is not started; use it as a context manager or call start()")
        if not (math.isfinite(timeout) and 0 < timeout <= MAX_CALL_TIMEOUT):  # nan, inf or 3e6 were tracebacks
            raise SandboxError(
                f"timeout must be a positive number of seconds (at most {MAX_CALL_TIMEOUT:g}), got {timeout}"
            )
        argv = as_argv(cmd)
        check_stdin(stdin)
        with self._calls:
            return self._exec(argv, timeout=timeout, stdin=stdin)

    def enforcement(self) -> dict[str, tuple[bool, str]]:
        """The limits this sandbox claims, by key (see probes.LIMITS): (True, how) or (False, why not). A key
        left out does not apply to this backend."""
        return {}

    def __enter__(self) -> SandboxBase:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _start(self) -> None:
        raise NotImplementedError

    def _stop(self) -> None:
        raise NotImplementedError

    def _exec(self, argv: list[str], *, timeout: float, stdin: str | None) -> ExecResult:
        raise NotImplementedError
