"""Running the wrapper as a host subprocess (bwrap and local backends), with a host-side backstop timeout."""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from .base import ExecResult, SandboxLimits
from .output import to_result, wrap

GRACE_S = 10.0
"""Seconds past a call's timeout before the host kills the process group itself (the inner timeout should fire)."""


def run_wrapped(prefix: list[str], argv: list[str], *, limits: SandboxLimits, timeout: float, stdin: str | None,
                cwd: Path | None = None, env: dict[str, str] | None = None) -> ExecResult:
    """Run `prefix + wrapper + argv`, in its own session so a kill reaches everything it started."""
    started = time.monotonic()
    proc = subprocess.Popen(prefix + wrap(argv, output_bytes=limits.output_bytes, timeout=timeout),
                            cwd=cwd, env=env, start_new_session=True,
                            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        raw, _ = proc.communicate(stdin.encode() if stdin is not None else None, timeout=timeout + GRACE_S)
    except subprocess.TimeoutExpired:
        _kill_session(proc)
        raw, _ = proc.communicate()
    except BaseException:  # Ctrl-C, SIGTERM turned into SystemExit: leave nothing running
        _kill_session(proc)
        proc.wait()
        raise
    return to_result(raw, fallback_exit=proc.returncode, timeout=timeout, seconds=time.monotonic() - started,
                     output_bytes=limits.output_bytes)


def _kill_session(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
