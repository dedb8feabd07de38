"""Running a server: uvicorn on a socket bound before anything is printed, with the limits uvicorn itself lacks.

    sock = bind("127.0.0.1", 8765)                       # ConfigError when the port is taken
    stopped_by = serve(app, sock, ServerLimits())        # 'SIGTERM', 'SIGHUP' or 'SIGINT': a graceful stop

uvicorn closes a connection left idle after a response, but not one that never finishes its request: a client that
sends a byte every 8 s held its connection for ever (3,000 of them: +132 MB), and nothing capped how many there
were. Here each request's headers must arrive within `header_timeout` seconds of its first byte (or of the
connection), its body within `body_timeout` of its headers, or the client gets a 408 and the connection is closed;
and a server holds at most `max_connections` connections: a new one beyond it takes the place of the longest idle
or slowest one (a connection waiting between requests, or still sending its headers), or, when every connection
is busy with a request, is answered 503 at once.
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
    return server.stopped_by


def server_config(app, limits: ServerLimits, **options) -> uvicorn.Config:
    """uvicorn's configuration with runbook's protocol and limits; logging is left to the caller's handlers."""
    return uvicorn.Config(
        app,
        http=type("LimitedH11", (SheddingH11Protocol,), {"limits": limits}),
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


class SheddingH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline on each request's headers and body, and a cap on connections."""

    limits = ServerLimits()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._deadline: asyncio.TimerHandle | None = None
        self._phase, self._since = "", time.monotonic()
        self._enter("headers", self.limits.header_timeout)
        held = sum(1 for c in self.connections if not c.transport.is_closing())  # a closed one leaves next turn
        if held > self.limits.max_connections and not self._shed_one():
            self._close_with(503, f"the server holds its limit of {self.limits.max_connections} connections: retry")

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._track()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._track()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel()
        super().connection_lost(exc)

    def _track(self) -> None:
        """The phase the request on this connection is in, and its deadline."""
        if self.transport.is_closing():
            return
        state = self.conn.their_state
        if state is h11.IDLE and self.cycle is not None and not self.cycle.response_complete:
            return  # the response is still being written
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
        self._phase, self._since = phase, time.monotonic()
        if timeout is not None:
            self._deadline = self.loop.call_later(timeout, self._expired)

    def _cancel(self) -> None:
        deadline = getattr(self, "_deadline", None)
        if deadline is not None:
            deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        self._deadline = None
        if self._phase == "headers":
            self._close_with(408, f"the request's headers did not arrive within {self.limits.header_timeout:g} s")
        elif self._phase == "body":
            self._close_with(408, f"the request's body did not arrive within {self.limits.body_timeout:g} s")

    def _shed_one(self) -> bool:
        """Close the connection that has waited longest between requests or over its headers; False if none."""
        waiting = [
            c
            for c in self.connections
            if isinstance(c, SheddingH11Protocol)
            and c is not self
            and c._phase in ("idle", "headers")
            and not c.transport.is_closing()
        ]
        if not waiting:
            return False
        oldest = min(waiting, key=lambda c: c._since)
        if oldest._phase == "idle":
            oldest.transport.close()
        else:
            oldest._close_with(503, "the server is at its connection limit: this slow request made room for another")
        return True

    def _close_with(self, status: int, message: str) -> None:
        """Answer `status` (unless a response has begun) and close: the client gets a reason, not a reset."""
        self._cancel()
        started = self.cycle is not None and self.cycle.response_started
        if not started and not self.transport.is_closing():
            body = json.dumps({"error": message}).encode()
            reason = {408: b"Request Timeout", 503: b"Service Unavailable"}[status]
            self.transport.write(
                b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\nconnection: close\r\n\r\n"
                % (status, reason, len(body))
                + body
            )
        access_log.info('%s "- -" %d %.0f ms %s', self.client[0] if self.client else "-", status, 0, message)
        self.transport.close()
