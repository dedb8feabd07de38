"""The host's side of the in-sandbox wrapper (runbook/sandbox/inside.py): the argv that runs a command through it,
and turning what it printed into an ExecResult.

The wrapper runs inside the sandbox so limits hold even if the caller dies: it ends the call at its timeout, cuts the
output to the limit before it crosses the sandbox boundary, and kills every process the call started when it ends.
Its trailer carries a per-call nonce the command never sees, so output cannot forge an exit code or a cut count.
"""

from __future__ import annotations

import functools
import hmac
import os
import re
import secrets
import tempfile
from pathlib import Path

from ..errors import SandboxError
from .base import ExecResult
from .inside import COUNT_CAP, NONCE_ENV, STDIN_ENV, TIMEOUT_EXIT

TRAILER_ROOM = 128
"""Bytes the trailer may take past the output limit; the host reads no more than limit + this."""
GRACE_S = 2.0
"""Seconds past a call's timeout before the host stops waiting and kills the call itself (the wrapper should have)."""
STDIN_CHUNK = 30_000
"""Characters per RUNBOOK_STDIN_nnn variable: one env string may not exceed 128 KiB (MAX_ARG_STRLEN)."""
STDIN_MAX = 1_000_000
"""Characters of stdin passed through the environment (ARG_MAX is ~2 MB for env and argv together)."""

INSIDE_ENV = "RUNBOOK_INSIDE"
"""Carries inside.py's source to the interpreter, so `ps` in the sandbox shows a short command line."""
BOOTSTRAP = f"import os; exec(os.environ.pop({INSIDE_ENV!r}))"

_TRAILER = re.compile(rb"\x1erunbook-([0-9a-f]{1,64}) (-?\d{1,4}) (\d{1,12}) ([01])\Z")


@functools.lru_cache(maxsize=1)
def inside_source() -> str:
    return Path(__file__).with_name("inside.py").read_text()


def new_nonce() -> str:
    return secrets.token_hex(8)


def host_pid_namespace() -> str:
    """This process's PID namespace, which the wrapper must not be in to kill every process it may signal."""
    return os.readlink("/proc/self/ns/pid")


def kill_all_scope() -> str:
    return f"all:{host_pid_namespace()}"


def inside_env() -> dict[str, str]:
    """The environment variable the argv below need (the wrapper removes it before running the command)."""
    return {INSIDE_ENV: inside_source()}


def wrapper_argv(python: str, argv: list[str], *, output_bytes: int, timeout: float, scope: str) -> list[str]:
    """The argv that runs `argv` under the wrapper (python: the interpreter inside the sandbox)."""
    return [python, "-I", "-S", "-c", BOOTSTRAP, "call", str(output_bytes), f"{timeout:.3f}", scope, "--", *argv]


def init_argv(python: str, lifetime_s: float, *serve: str) -> list[str]:
    """The argv of the sandbox's PID 1 (serve: the bwrap control socket's fd and the jail's name)."""
    return [python, "-I", "-S", "-c", BOOTSTRAP, "init", f"{lifetime_s:.0f}", *serve]


def stdin_env(stdin: str | None) -> dict[str, str]:
    """Stdin as environment variables, for backends (docker exec) that cannot stream it cheaply."""
    if stdin is None:
        return {}
    if len(stdin) > STDIN_MAX:
        raise SandboxError(
            f"stdin of {len(stdin):,} characters is over the {STDIN_MAX:,} limit; write the data to a "
            f"file under /scratch in one call and read it in the next"
        )
    chunks = [stdin[i : i + STDIN_CHUNK] for i in range(0, len(stdin), STDIN_CHUNK)] or [""]
    return {f"{STDIN_ENV}{i:03d}": chunk for i, chunk in enumerate(chunks)}


def stdin_fd(stdin: str | bytes | None) -> int:
    """A read fd for a call's stdin (or bwrap's seccomp program): a memory file holding it, so no file is left
    anywhere, or /dev/null."""
    if stdin is None:
        return os.open(os.devnull, os.O_RDONLY)
    fd = os.memfd_create("stdin") if hasattr(os, "memfd_create") else os.dup(tempfile.TemporaryFile().fileno())
    view = memoryview(stdin.encode() if isinstance(stdin, str) else stdin)
    while view:
        view = view[os.write(fd, view) :]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def nonce_env(nonce: str) -> dict[str, str]:
    return {NONCE_ENV: nonce}


def reported(raw: bytes, nonce: str) -> bool:
    """Whether `raw` ends with the wrapper's trailer for this call."""
    match = _TRAILER.search(raw, max(0, len(raw) - TRAILER_ROOM))
    return match is not None and hmac.compare_digest(match.group(1), nonce.encode())


def to_result(
    raw: bytes,
    *,
    nonce: str,
    fallback_exit: int | None,
    timeout: float,
    seconds: float,
    output_bytes: int,
    late: bool = False,
    over_cap: bool = False,
) -> ExecResult:
    """Split the wrapper's trailer off `raw` and describe cuts and timeouts in the output, for the model to read.

    late: the host's own deadline ended the call; over_cap: the host stopped reading at its cap. Without a trailer
    carrying `nonce` (the wrapper was killed), the exit code is `fallback_exit`, the engine's view."""
    match = _TRAILER.search(raw, max(0, len(raw) - TRAILER_ROOM))
    trailer = match is not None and hmac.compare_digest(match.group(1), nonce.encode())
    if trailer:
        assert match is not None  # a trailer was matched
        body, exit_code = raw[: match.start()], int(match.group(2))
        cut, timed_out = int(match.group(3)), match.group(4) == b"1"
    else:
        body, cut, timed_out = raw, 0, False
        exit_code = fallback_exit if fallback_exit is not None else TIMEOUT_EXIT
    if late:
        timed_out, exit_code = True, TIMEOUT_EXIT
    if len(body) > output_bytes:  # the wrapper was killed before cutting; cut here so the limit still holds
        cut += len(body) - output_bytes
        body = body[:output_bytes]
    if over_cap and not cut:
        cut = 1  # the host stopped reading: at least one byte was not shown
    text = body.decode("utf-8", errors="replace")
    notes = []
    if cut:
        more = (
            f"at least {cut:,} more bytes were not shown and the command was stopped for writing too much"
            if cut >= COUNT_CAP or over_cap
            else f"{cut:,} more bytes were not shown"
        )
        notes.append(f"[runbook: output cut to the first {len(body):,} bytes; {more}]")
    if timed_out:
        notes.append(f"[runbook: timed out after {timeout:g} s; the command and every process it started were killed]")
    elif not trailer:
        notes.append(
            f"[runbook: the call was killed before it could report (exit code {exit_code}); every process "
            f"it started was killed]"
        )
    if notes:
        text += ("" if not text or text.endswith("\n") else "\n") + "\n".join(notes)
    return ExecResult(
        exit_code=exit_code,
        output=text,
        truncated=bool(cut),
        timed_out=timed_out,
        seconds=round(seconds, 4),
        cut_bytes=cut,
    )
