"""The in-sandbox wrapper every backend runs a command through, and turning what it prints into an ExecResult.

The wrapper runs inside the sandbox so limits hold even if the caller dies: the timeout is `timeout -s KILL`
(killing a docker exec client does not kill its process), output beyond the limit is counted and dropped before it
crosses the sandbox boundary, and processes a command left running in the background are killed when it returns.
"""
from __future__ import annotations

import re

from .base import ExecResult

COUNT_CAP = 100_000_000
"""Bytes counted past the output limit; a command writing more is stopped (SIGPIPE) instead of running on."""

STDIN_CHUNK = 30_000
"""Characters per RUNBOOK_STDIN_nnn variable: one env string may not exceed 128 KiB (MAX_ARG_STRLEN)."""
STDIN_MAX = 1_000_000
"""Characters of stdin passed through the environment (ARG_MAX is ~2 MB for env and argv together)."""

# $1 output limit in bytes, $2 timeout in seconds, then the command. Prints the command's output, then
# "\036runbook-cut N" and "\036runbook-exit RC". Needs bash 5.1+ (wait on a process substitution) and coreutils.
WRAPPER = r"""
exec 2>/dev/null
limit=$1; secs=$2; shift 2
if [ -n "${RUNBOOK_STDIN_000+x}" ]; then
  exec 0< <(for v in "${!RUNBOOK_STDIN_@}"; do printf '%s' "${!v}"; done)
  for v in "${!RUNBOOK_STDIN_@}"; do unset "$v"; done
fi
exec 3> >(head -c "$limit"; printf '\036runbook-cut '; head -c COUNT_CAP | wc -c)
reader=$!
timeout -s KILL "$secs" "$@" <&0 >&3 2>&3 3>&- &
job=$!
wait "$job"; rc=$?
kill -KILL -- "-$job"
exec 3>&-
wait "$reader"
printf '\036runbook-exit %s' "$rc"
exit "$rc"
""".replace("COUNT_CAP", str(COUNT_CAP))

_TRAILER = re.compile(rb"(?:\x1erunbook-cut\s*(\d+)\s*)?(?:\x1erunbook-exit (\d+))?\Z")


def wrap(argv: list[str], *, output_bytes: int, timeout: float) -> list[str]:
    """The argv that runs `argv` under the wrapper."""
    return ["bash", "-c", WRAPPER, "runbook-exec", str(output_bytes), f"{timeout:.3f}", *argv]


def stdin_env(stdin: str | None) -> dict[str, str]:
    """Stdin as environment variables, for backends (docker exec) that cannot stream it cheaply."""
    from ..errors import SandboxError
    if stdin is None:
        return {}
    if len(stdin) > STDIN_MAX:
        raise SandboxError(f"stdin of {len(stdin):,} characters is over the {STDIN_MAX:,} limit; write the data to a "
                           f"file under /scratch in one call and read it in the next")
    if "\0" in stdin:
        raise SandboxError("stdin may not contain NUL characters; pass binary data as a file under /scratch")
    chunks = [stdin[i:i + STDIN_CHUNK] for i in range(0, len(stdin), STDIN_CHUNK)] or [""]
    return {f"RUNBOOK_STDIN_{i:03d}": chunk for i, chunk in enumerate(chunks)}


def to_result(raw: bytes, *, fallback_exit: int | None, timeout: float, seconds: float,
              output_bytes: int) -> ExecResult:
    """Split the wrapper's trailer off `raw` and describe cuts and timeouts in the output, for the model to read."""
    match = _TRAILER.search(raw)
    body = raw[:match.start()] if match else raw
    cut = int(match.group(1)) if match and match.group(1) else 0
    exit_code = int(match.group(2)) if match and match.group(2) else fallback_exit
    if exit_code is None:
        exit_code = -1
    if len(body) > output_bytes:  # the wrapper was killed before cutting; cut here so the limit still holds
        cut += len(body) - output_bytes
        body = body[:output_bytes]
    # timeout -s KILL kills its own process group, itself included, so a timeout shows as 137 (124 with other signals)
    timed_out = exit_code in (124, 137) and seconds >= timeout
    text = body.decode("utf-8", errors="replace")
    notes = []
    if cut:
        more = f"at least {cut:,} more bytes were not shown and the command was stopped for writing too much" \
            if cut >= COUNT_CAP else f"{cut:,} more bytes were not shown"
        notes.append(f"[runbook: output cut to the first {len(body):,} bytes; {more}]")
    if timed_out:
        notes.append(f"[runbook: timed out after {timeout:g} s; the command was killed]")
    if notes:
        text += ("" if not text or text.endswith("\n") else "\n") + "\n".join(notes)
    return ExecResult(exit_code=exit_code, output=text, truncated=bool(cut), timed_out=timed_out,
                      seconds=round(seconds, 4), cut_bytes=cut)
