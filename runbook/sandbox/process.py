"""Running one call as a host subprocess through the wrapper (the local backend), read capped and with a deadline."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from .base import ExecResult, SandboxLimits
from .output import GRACE_S, TRAILER_ROOM, inside_env, new_nonce, nonce_env, reported, stdin_fd, to_result, wrapper_argv
from .stream import read_capped


def run_wrapped(
    argv: list[str],
    *,
    limits: SandboxLimits,
    timeout: float,
    stdin: str | None,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> ExecResult:
    """Run `argv` under the wrapper in a session of its own, so a kill reaches the wrapper and its command."""
    started = time.monotonic()
    nonce = new_nonce()
    limit = limits.output_bytes
    in_fd = stdin_fd(stdin)
    try:
        proc = subprocess.Popen(
            wrapper_argv(sys.executable, argv, output_bytes=limit, timeout=timeout, scope="group"),
            cwd=cwd,
            env={**(env if env is not None else os.environ), **inside_env(), **nonce_env(nonce)},
            start_new_session=True,
            stdin=in_fd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
    finally:
        os.close(in_fd)
    assert proc.stdout is not None  # stdout=PIPE
    try:
        got = read_capped(proc.stdout.fileno(), cap=limit + TRAILER_ROOM, deadline=started + timeout + GRACE_S)
        if not (got.ended and reported(got.data, nonce)):
            _kill_session(proc)
        proc.wait()
    except BaseException:  # Ctrl-C, SIGTERM turned into SystemExit: leave nothing running
        _kill_session(proc)
        proc.wait()
        raise
    finally:
        proc.stdout.close()
    code = proc.returncode if proc.returncode >= 0 else 128 - proc.returncode  # killed by signal N: 128 + N
    return to_result(
        got.data,
        nonce=nonce,
        fallback_exit=code,
        timeout=timeout,
        seconds=time.monotonic() - started,
        output_bytes=limit,
        late=got.late,
        over_cap=got.over_cap,
    )


def _kill_session(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
