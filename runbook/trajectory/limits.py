"""How much a trajectory source may expand to when it is read: decompressed bytes per file and per line (one
record), checked as the bytes arrive, so a small `.gz` that expands to gigabytes is refused before it is read on.

A 195 KB `.jsonl.gz` expanded to a 200 MB page (698 MB at its peak), 972 KB to a 1 GB line (over 2 GB), and 972 KB
of blank lines (a gigabyte of line breaks) was still being read after 300 s. Lines are now read in chunks, runs of
blank lines skipped at C speed, and both sizes bounded: the largest real line (a WebArena trajectory of 41 states)
is 4.5 MB, the whole WebArena set 177 MB.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from ..errors import InputError

MAX_FILE_BYTES = 4 << 30
"""A source file's bytes once decompressed (4 GiB): `runbook insert --max-file-bytes`."""
MAX_LINE_BYTES = 64 << 20
"""One line of a JSONL source, or a whole JSON document (64 MiB): `runbook insert --max-line-bytes`."""
_CHUNK = 1 << 20
_BLANKS = re.compile(rb"[ \t\r\n]+")
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


class Readable(Protocol):
    """A binary file as the readers open it (plain or gzip): what Counted reads through."""

    def read(self, size: int = ..., /) -> bytes: ...

    def readline(self, size: int = ..., /) -> bytes: ...


@dataclass(frozen=True, slots=True)
class ReadLimits:
    """The bounds a reader applies to one source."""

    file_bytes: int = MAX_FILE_BYTES
    line_bytes: int = MAX_LINE_BYTES


DEFAULT_LIMITS = ReadLimits()


def parse_size(text: str) -> int:
    """'64M', '4g', '1500000' -> bytes (K, M, G are powers of 1024); ValueError otherwise."""
    match = re.fullmatch(r"\s*(\d+)\s*([kmg]?)i?b?\s*", text.lower())
    if not match or int(match.group(1)) <= 0:
        raise ValueError(f"{text!r} is not a size such as 64M, 4G or 1500000")
    return int(match.group(1)) * _UNITS[match.group(2)]


def _too_big(what: str, limit: int, option: str, path: str, line: int | None = None) -> InputError:
    return InputError(
        f"{what} more than {limit:,} bytes once decompressed: not read further (a larger one needs {option})",
        path=path,
        line=line,
    )


class Counted:
    """A binary file read through a count of its bytes: InputError once they pass the file's limit (what a
    decompressing reader, gzip or an unpickler, would otherwise expand without end)."""

    def __init__(self, fh: Readable, path: str, limits: ReadLimits = DEFAULT_LIMITS):
        self.fh, self.path, self.limits, self.total = fh, path, limits, 0

    def _count(self, data: bytes) -> bytes:
        self.total += len(data)
        if self.total > self.limits.file_bytes:
            raise _too_big("the file holds", self.limits.file_bytes, "--max-file-bytes", self.path)
        return data

    def read(self, size: int = _CHUNK) -> bytes:
        return self._count(self.fh.read(size))

    def readline(self, size: int = -1) -> bytes:
        return self._count(self.fh.readline(size if size >= 0 else self.limits.line_bytes + 1))


def check_file_size(path: str | os.PathLike, limits: ReadLimits = DEFAULT_LIMITS) -> None:
    """InputError when a JSON file read whole (a step record, a history) is larger than one record may be."""
    size = os.stat(path).st_size
    if size > limits.line_bytes:
        raise _too_big("the JSON file has", limits.line_bytes, "--max-line-bytes", str(path))


def read_document(fh: Readable, path: str, limits: ReadLimits = DEFAULT_LIMITS, head: bytes = b"") -> bytes:
    """The rest of `fh` (after `head`) as one JSON document, refused past the line limit (a document is one
    record) or the file limit."""
    counted, parts, size = Counted(fh, path, limits), [head], len(head)
    while chunk := counted.read():
        size += len(chunk)
        if size > limits.line_bytes:
            raise _too_big("the JSON document has", limits.line_bytes, "--max-line-bytes", path)
        parts.append(chunk)
    return b"".join(parts)


def bounded_lines(fh: Readable, path: str, limits: ReadLimits = DEFAULT_LIMITS) -> Iterator[tuple[int, bytes]]:
    """(line number, line) of every line that is not blank, each refused past the line limit as it is read (the
    file past the file limit); blank lines are skipped in bulk, so a gigabyte of them takes seconds."""
    counted = Counted(fh, path, limits)
    lineno, partial_size = 1, 0
    partial: list[bytes] = []
    while chunk := counted.read():
        pos, end = 0, len(chunk)
        while pos < end:
            if not partial:  # at a line's start: skip a run of blank lines (and leading spaces) at once
                blanks = _BLANKS.match(chunk, pos)
                if blanks:
                    lineno += chunk.count(b"\n", pos, blanks.end())
                    pos = blanks.end()
                    continue
            newline = chunk.find(b"\n", pos)
            stop = end if newline < 0 else newline
            partial_size += stop - pos
            if partial_size > limits.line_bytes:
                raise _too_big("the line has", limits.line_bytes, "--max-line-bytes", path, lineno)
            partial.append(chunk[pos:stop])
            if newline < 0:
                break
            line = b"".join(partial)
            partial, partial_size = [], 0
            if line.strip():
                yield lineno, line
            lineno += 1
            pos = newline + 1
    if partial and b"".join(partial).strip():
        yield lineno, b"".join(partial)
