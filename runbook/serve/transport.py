"""Running a server: uvicorn on a socket bound before anything is printed, with the limits uvicorn itself lacks.

    sock = bind("127.0.0.1", 8765)                       # ConfigError when the port is taken
    stopped_by = serve(app, sock, ServerLimits())        # 'SIGTERM', 'SIGHUP' or 'SIGINT': a graceful stop

uvicorn closes a connection left idle after a response, but not one that never finishes its request: a client that
sends a byte every 8 s held its connection for ever (3,000 of them: +132 MB), and nothing capped how many there
were. Here each request's headers must arrive within `header_timeout` seconds of its first byte (or of the
connection), its body within `body_timeout` of its headers, or the client gets a 408 and the connection is closed;
and a server holds at most `max_connections` connections: a new one beyond it takes the place of the longest idle
or slowest one (a connection that has waited `SLOW_AFTER` seconds or more between requests, or for its headers),
or, when there is none, is answered 503 at once. What it sheds and refuses is counted, and logged as one line every
`TALLY_SECONDS` (a flood of connections would otherwise be a flood of log lines).
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import socket
import threading
import time
from collections.abc import Generator
from contextlib import contextmanager
from dataclasses import dataclass

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from ..errors import ConfigError

log = logging.getLogger("runbook.serve")
access_log = logging.getLogger("runbook.access")

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""Each stops a server gracefully: Ctrl-C, `kill` (systemd, docker stop) and a closed terminal or a reload."""
GRACE_SECONDS = 10
"""How long a stopping server lets requests in flight finish (a method C query may take longer: it is cut)."""
SLOW_AFTER = 1.0
"""Seconds a connection must have waited (for its headers, or for its next request) before it may be shed for a
newcomer: under a flood of new connections, ones just accepted (normal clients among them) would shed each other."""
TALLY_SECONDS = 10.0


@dataclass(frozen=True)
class ServerLimits:
    """What one server process lets its clients hold; each is an option of `runbook serve http|mcp`."""

    max_connections: int = 256
    """Connections at once (about 45 KB each while idle)."""
    header_timeout: float = 10.0
    """Seconds a request's headers may take to arrive, from its first byte (or from the connection)."""
    body_timeout: float = 60.0
    """Seconds a request's body may take to arrive, from its headers (20 MB at 350 KB/s)."""
    idle_timeout: int = 5
    """Seconds a connection may wait for its next request (HTTP keep-alive)."""

    def describe(self) -> str:
        return (
            f"at most {self.max_connections} connections, headers within {self.header_timeout:g} s, bodies within "
            f"{self.body_timeout:g} s, idle connections closed after {self.idle_timeout} s"
        )


def bind(host: str, port: int) -> socket.socket:
    """A socket bound to `host`:`port`, ready for uvicorn; ConfigError saying what to do when it cannot be."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as exc:
        raise ConfigError(
            f"cannot serve on {host!r}: {exc.strerror}; give an address of this machine with --host"
        ) from exc
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise ConfigError(
            f"cannot serve on {host}:{port}: {exc.strerror}"
            + (" (another server holds the port: choose another with --port)" if exc.errno == 98 else "")
        ) from exc
    return sock


def serve(app, sock: socket.socket, limits: ServerLimits) -> str | None:
    """Serve `app` on `sock` until a stop signal; the signal's name (None when the server stopped otherwise)."""
    server = GracefulServer(server_config(app, limits))
    server.run(sockets=[sock])
    _tally.flush()
    return server.stopped_by


def server_config(app, limits: ServerLimits, **options) -> uvicorn.Config:
    """uvicorn's configuration with runbook's protocol and limits; logging is left to the caller's handlers."""
    return uvicorn.Config(
        app,
        http=type("LimitedH11", (SheddingH11Protocol,), {"limits": limits, "registry": Connections()}),
        timeout_keep_alive=limits.idle_timeout,
        timeout_graceful_shutdown=GRACE_SECONDS,
        log_config=None,
        log_level="warning",
        access_log=False,
        lifespan="on",
        **options,
    )


class GracefulServer(uvicorn.Server):
    """uvicorn's server stopping gracefully on SIGHUP too (it knows SIGINT and SIGTERM only: SIGHUP killed
    `serve http` on the spot, leaving its warm container and temporary folder), and not raising the signal again
    once stopped (which ended the command with click's `Aborted!`)."""

    stopped_by: str | None = None

    @contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
        for sig, handler in previous.items():
            if handler is not signal.SIG_IGN:  # `nohup` ignores SIGHUP: so does the server
                signal.signal(sig, self.handle_exit)
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def handle_exit(self, sig: int, frame) -> None:
        self.stopped_by = self.stopped_by or signal.Signals(sig).name
        super().handle_exit(sig, frame)


class Connections:
    """One server's connections, counted as they open and close: how many it holds (a connection being closed no
    longer counts), and the ones waiting (between requests, or for their headers) oldest first. O(1) per
    connection: a flood of new connections must cost the server little more than their accept."""

    def __init__(self) -> None:
        self.held = 0
        self.waiting: dict[SheddingH11Protocol, float] = {}  # insertion order is age order: oldest first

    def oldest_waiting(self, at_least: float) -> SheddingH11Protocol | None:
        for connection, since in self.waiting.items():
            return connection if time.monotonic() - since >= at_least else None
        return None


class SheddingH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline on each request's headers and body, and a cap on connections."""

    limits = ServerLimits()
    registry = Connections()
    """Replaced per server by server_config: the connections of that one server."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._deadline: asyncio.TimerHandle | None = None
        self._phase, self._counted = "", True
        self.registry.held += 1
        self._enter("headers", self.limits.header_timeout)
        if self.registry.held > self.limits.max_connections and not self._shed_one():
            self._close_with(503, f"the server holds its limit of {self.limits.max_connections} connections: retry")

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._track()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._track()

    def connection_lost(self, exc: Exception | None) -> None:
        self._release()
        super().connection_lost(exc)

    def _track(self) -> None:
        """The phase the request on this connection is in, and its deadline."""
        if self.transport.is_closing():
            self._release()
            return
        state = self.conn.their_state
        if state is h11.IDLE:
            waiting = self.conn.trailing_data[0] or self._phase == "headers"
            if waiting:  # part of the next request has arrived: its headers are on the clock
                if self._phase != "headers":
                    self._enter("headers", self.limits.header_timeout)
            else:
                self._enter("idle", None)  # uvicorn's keep-alive timeout closes it
        elif state is h11.SEND_BODY:
            if self._phase != "body":
                self._enter("body", self.limits.body_timeout)
        else:
            self._enter("app", None)

    def _enter(self, phase: str, timeout: float | None) -> None:
        self._cancel()
        self._phase = phase
        self.registry.waiting.pop(self, None)
        if phase in ("idle", "headers"):
            self.registry.waiting[self] = time.monotonic()
        if timeout is not None:
            self._deadline = self.loop.call_later(timeout, self._expired)

    def _cancel(self) -> None:
        deadline = getattr(self, "_deadline", None)
        if deadline is not None:
            deadline.cancel()
            self._deadline = None

    def _release(self) -> None:
        """This connection no longer counts toward the limit (it is closing, or closed)."""
        self._cancel()
        if getattr(self, "_counted", False):
            self._counted = False
            self.registry.held -= 1
            self.registry.waiting.pop(self, None)

    def _expired(self) -> None:
        self._deadline = None
        if self._phase == "headers":
            self._close_with(408, f"the request's headers did not arrive within {self.limits.header_timeout:g} s")
        elif self._phase == "body":
            self._close_with(408, f"the request's body did not arrive within {self.limits.body_timeout:g} s")

    def _shed_one(self) -> bool:
        """Close the connection that has waited longest between requests or over its headers (at least SLOW_AFTER
        seconds); False if there is none."""
        oldest = self.registry.oldest_waiting(SLOW_AFTER)
        if oldest is None or oldest is self:
            return False
        if oldest._phase == "idle":
            _tally.note("idle connections closed at the connection limit")
            oldest._release()
            oldest.transport.close()
        else:
            oldest._close_with(503, "the server is at its connection limit: this slow request made room for another")
        return True

    def _close_with(self, status: int, message: str) -> None:
        """Answer `status` (unless a response has begun) and close: the client gets a reason, not a reset."""
        self._release()
        started = self.cycle is not None and self.cycle.response_started
        if not started and not self.transport.is_closing():
            body = json.dumps({"error": message}).encode()
            reason = {408: b"Request Timeout", 503: b"Service Unavailable"}[status]
            self.transport.write(
                b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\nconnection: close\r\n\r\n"
                % (status, reason, len(body))
                + body
            )
        _tally.note(f"{status}: {message.split(':')[0]}")
        self.transport.close()


class _Tally:
    """Connections shed, refused or timed out, by why: logged as one line every TALLY_SECONDS."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.since = time.monotonic()

    def note(self, why: str) -> None:
        self.counts[why] = self.counts.get(why, 0) + 1
        if time.monotonic() - self.since >= TALLY_SECONDS:
            self.flush()

    def flush(self) -> None:
        if self.counts:
            shown = "; ".join(f"{n} {why}" for why, n in sorted(self.counts.items()))
            access_log.info("connections in the last %.0f s: %s", time.monotonic() - self.since, shown)
        self.counts, self.since = {}, time.monotonic()


_tally = _Tally()
