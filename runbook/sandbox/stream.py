"""Reading a call's output on the host: at most a cap, never past a deadline, whatever the sandbox does.

The wrapper inside already cuts the output; this is the host's own bound, for a wrapper that was killed, stopped or
bypassed. It reads a pipe (bwrap, local) or a docker exec socket (frames: 1 byte stream, 3 zero bytes, 4 bytes
big-endian length, then the payload), keeps what arrived before it stopped, and says why it stopped.
"""

from __future__ import annotations

import os
import select
import struct
import time
from dataclasses import dataclass

CHUNK = 65536
FRAME_HEADER = 8


@dataclass
class Collected:
    """What was read, and why reading stopped."""

    data: bytes
    ended: bool = False
    """The writer closed its end (the call is over, or its wrapper died)."""
    over_cap: bool = False
    """More than the cap arrived; the rest was left unread."""
    late: bool = False
    """The deadline passed first."""


class _Frames:
    """Payload of a docker multiplexed stream, fed in pieces."""

    def __init__(self) -> None:
        self.pending = b""

    def feed(self, raw: bytes) -> bytes:
        self.pending += raw
        out = []
        while len(self.pending) >= FRAME_HEADER:
            size = struct.unpack(">I", self.pending[4:8])[0]
            available = len(self.pending) - FRAME_HEADER
            take = min(size, available)
            out.append(self.pending[FRAME_HEADER : FRAME_HEADER + take])
            if take < size:  # a partial frame: keep its header with the rest of its length
                self.pending = self.pending[:4] + struct.pack(">I", size - take)
                break
            self.pending = self.pending[FRAME_HEADER + size :]
        return b"".join(out)


def read_capped(fd: int, *, cap: int, deadline: float, frames: bool = False, first: bytes = b"") -> Collected:
    """Read `fd` until EOF, more than `cap` payload bytes, or `deadline` (time.monotonic()). `frames`: the fd is a
    docker exec stream; `first`: bytes already read from it by the HTTP client."""
    demux = _Frames() if frames else None
    parts: list[bytes] = []
    size = 0

    def take(raw: bytes) -> bool:
        nonlocal size
        payload = demux.feed(raw) if demux else raw
        room = cap - size
        parts.append(payload[: max(room, 0)])
        size += len(payload)
        return size > cap

    if first and take(first):
        return Collected(b"".join(parts), over_cap=True)
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return Collected(b"".join(parts), late=True)
        if not poller.poll(max(1, int(left * 1000))):
            continue
        try:
            raw = os.read(fd, CHUNK)
        except (BlockingIOError, InterruptedError):
            continue
        except ConnectionResetError:
            raw = b""
        if not raw:
            return Collected(b"".join(parts), ended=True)
        if take(raw):
            return Collected(b"".join(parts), over_cap=True)
