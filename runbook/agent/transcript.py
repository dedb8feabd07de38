"""Every query's transcript: one JSON object per line (each call, its full output, timings, tokens), and replay.

Records, in order: `start` (question, policy, limits), then per step an `assistant` record (text, tool calls,
usage, seconds) and one `tool` record per call (arguments, full output, shown tokens, elided tokens, exit code,
seconds, error), `nudge` when the policy answered without a tool call, `stop` (reason, steps, tokens, cost), and
`result` (what the caller made of it: items, tokens). Each line is flushed as it is written, so a transcript
survives a crash up to its last step.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..errors import RunbookError

ENV_DIR = "RUNBOOK_TRANSCRIPTS"


def transcripts_dir() -> Path:
    """Where transcripts go: $RUNBOOK_TRANSCRIPTS, else ~/.cache/runbook/transcripts (never inside the store)."""
    if os.environ.get(ENV_DIR):
        return Path(os.environ[ENV_DIR]).expanduser()
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "runbook" / "transcripts"


_TRANSCRIPT_NAME = re.compile(r"\d{8}T\d{12}Z-[a-z0-9-]*\.jsonl")
"""What transcript_path names a transcript: only such files are pruned."""


def transcript_path(question: str, folder: str | os.PathLike | None = None) -> Path:
    """`<folder>/<UTC timestamp>-<slug of the question>.jsonl`."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    slug = re.sub(r"[^a-z0-9]+", "-", question.lower()).strip("-")[:48] or "query"
    return Path(folder or transcripts_dir()) / f"{stamp}-{slug}.jsonl"


def prune(folder: str | os.PathLike, keep: int) -> int:
    """Remove the oldest transcripts of `folder` (their names start with their UTC time) beyond the newest `keep`;
    how many went. Only runbook's own file names are touched."""
    base = Path(folder)
    try:
        names = sorted(n for n in os.listdir(base) if _TRANSCRIPT_NAME.fullmatch(n))
    except FileNotFoundError:
        return 0
    gone = 0
    for name in names[: max(0, len(names) - keep)]:
        try:
            (base / name).unlink()
            gone += 1
        except FileNotFoundError:
            pass  # another query removed it first
    return gone


class TranscriptWriter:
    """Appends records to one JSONL file; `t` on each record is seconds since the writer was made. With `keep`,
    the folder keeps at most that many transcripts, this one included (0: nothing is written)."""

    def __init__(self, path: str | os.PathLike, *, keep: int | None = None):
        self.path = Path(path)
        self._fh = None
        self._t0 = time.monotonic()
        if keep == 0:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if keep is not None:
            prune(self.path.parent, keep - 1)
        self._fh = open(self.path, "a", encoding="utf-8")

    def record(self, type_: str, **fields: Any) -> None:
        if self._fh is None:
            return
        entry = {"type": type_, "t": round(time.monotonic() - self._t0, 4), **fields}
        self._fh.write(json.dumps(entry, ensure_ascii=False, default=str) + "\n")
        self._fh.flush()

    def close(self) -> None:
        if self._fh is not None and not self._fh.closed:
            self._fh.close()

    def __enter__(self) -> TranscriptWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def latest_transcript(folder: str | os.PathLike | None = None) -> Path:
    """The newest transcript in `folder` (default: transcripts_dir())."""
    base = Path(folder) if folder else transcripts_dir()
    found = sorted(base.glob("*.jsonl")) if base.is_dir() else []
    if not found:
        raise RunbookError(
            f"no transcripts in {base}: run a query with method c first (`runbook query ...`), "
            f"or pass a transcript's path"
        )
    return found[-1]


def read_transcript(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The records of a transcript file; a torn last line (a crash mid-write) is skipped."""
    path = Path(path)
    if not path.is_file():
        raise RunbookError(
            f"no transcript at {path}; transcripts are written to {transcripts_dir()} (set {ENV_DIR} to change that)"
        )
    records = []
    lines = path.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            if number == len(lines):
                break
            raise RunbookError(f"{path}:{number}: not a JSON transcript record") from None
    return records


@dataclass
class ReplayOptions:
    """How much of each tool output `render_replay` prints."""

    output_lines: int | None = 20
    """Lines of each tool output to print (head); None prints everything."""


def render_replay(records: list[dict[str, Any]], options: ReplayOptions | None = None) -> Iterator[str]:
    """A readable account of a transcript, one block per record."""
    options = options or ReplayOptions()
    for rec in records:
        kind = rec.get("type")
        at = f"[{rec.get('t', 0):7.2f}s]"
        if kind == "start":
            yield f"{at} question: {rec.get('question')}"
            yield (
                f"           policy {rec.get('policy')} model {rec.get('model') or '-'}  "
                f"limits {_compact(rec.get('limits'))}"
            )
        elif kind == "assistant":
            usage = rec.get("usage") or {}
            tokens = f"{usage.get('input_tokens', 0)}+{usage.get('output_tokens', 0)} tokens" if usage else "no usage"
            yield f"{at} step {rec.get('step')}  ({rec.get('seconds', 0):.2f}s, {tokens})"
            if rec.get("text"):
                yield _indent(rec["text"], "    says: ")
            for call in rec.get("tool_calls", []):
                yield f"    call {call.get('name')}({_compact(call.get('arguments'))})" + (
                    f"  !! {call['error']}" if call.get("error") else ""
                )
        elif kind == "tool":
            status = "error" if rec.get("error") else f"exit {rec.get('exit_code', 0)}"
            elided = f", {rec['elided_tokens']} tokens elided for the model" if rec.get("elided_tokens") else ""
            yield f"{at}   -> {rec.get('name')}: {status}, {rec.get('seconds', 0):.2f}s{elided}"
            yield _indent(_head(rec.get("output", ""), options.output_lines), "       | ")
        elif kind == "nudge":
            yield f"{at}   nudge: {rec.get('text')}"
        elif kind == "stop":
            yield (
                f"{at} stop ({rec.get('kind')}): {rec.get('reason')}  steps {rec.get('steps')}, "
                f"tokens {rec.get('tokens')}, cost {rec.get('cost')}"
            )
            if rec.get("analysis"):
                yield _indent(rec["analysis"], "    analysis: ")
            for span in rec.get("spans") or []:
                yield f"    span {span['trajectory_id']} {span['start_state_index']}-{span['end_state_index']}"
        elif kind == "result":
            yield f"{at} result: {rec.get('items')} items, {rec.get('tokens')} of {rec.get('budget')} tokens"
            for cite in rec.get("citations", []):
                yield f"    {cite}"
        else:
            yield f"{at} {kind}: {_compact({k: v for k, v in rec.items() if k not in ('type', 't')})}"


def _head(text: str, lines: int | None) -> str:
    parts = text.splitlines()
    if lines is None or len(parts) <= lines:
        return text
    return "\n".join(parts[:lines]) + f"\n… {len(parts) - lines} more lines (replay --full shows them)"


def _indent(text: str, prefix: str) -> str:
    pad = " " * len(prefix)
    return "\n".join((prefix if n == 0 else pad) + line for n, line in enumerate(str(text).splitlines() or [""]))


def _compact(value: Any, limit: int = 200) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit] + "…"
