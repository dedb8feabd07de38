"""What a request must pass before it reaches either server (the HTTP API, or the MCP server over streamable HTTP):
its Host and Origin headers, and the API key when one is set. ASGI middlewares, the same for both servers, with the
access log that records what they refuse.

A server on 127.0.0.1 is not private to the machine's own programs: a web page the user opens elsewhere can point
a name of its own at 127.0.0.1 (DNS rebinding) and send requests the browser thinks go to that other site. They
carry the page's Host and Origin, never this server's: so a request whose Host is not one of the server's own
names (421), or whose Origin is a site other than the server itself (403), is refused before anything is read.
`--allow-host NAME` and `--allow-origin URL` add names (behind a reverse proxy, say); `*` turns that check off.
"""

from __future__ import annotations

import hmac
import json
import logging
import socket
import time
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass
from typing import Any

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Message, Receive, Send], Awaitable[None]]

LOOPBACK = ("127.0.0.1", "localhost", "::1")
WILDCARD = ("0.0.0.0", "::", "")
ANY = "*"
access_log = logging.getLogger("runbook.access")


@dataclass(frozen=True)
class Admission:
    """Who a server answers: the Host values and Origins it accepts (None: any) and the API key (None: none)."""

    hosts: frozenset[str] | None
    origins: frozenset[str] | None
    api_key: str | None = None
    public: tuple[str, ...] = ()
    """Path prefixes served without the key (the HTTP API's schema and docs)."""

    @classmethod
    def bound_to(
        cls,
        host: str,
        port: int,
        *,
        api_key: str | None = None,
        allow_hosts: Iterable[str] = (),
        allow_origins: Iterable[str] = (),
        public: tuple[str, ...] = (),
    ) -> Admission:
        """What a server bound to `host`:`port` accepts: its own names (with a wildcard address, every name and
        address of this machine), and the names and origins given besides."""
        extra_hosts, extra_origins = list(allow_hosts), list(allow_origins)
        hosts = None if ANY in extra_hosts else frozenset(_host_values(host, port, extra_hosts))
        origins: frozenset[str] | None = None
        if ANY not in extra_origins:
            origins = frozenset(extra_origins) | frozenset(
                f"{scheme}://{value}" for value in (hosts or ()) for scheme in ("http", "https")
            )
            if hosts is None:
                origins = None  # any Host: the origin check has no site of its own to compare with
        return cls(hosts, origins, api_key, public)

    @classmethod
    def loopback(cls, *, api_key: str | None = None, public: tuple[str, ...] = ()) -> Admission:
        """A loopback server's on any port: what an app made without knowing its address accepts."""
        names = ("127.0.0.1", "localhost", "[::1]")
        return cls(
            frozenset(f"{name}:*" for name in names),
            frozenset(f"{scheme}://{name}:*" for name in names for scheme in ("http", "https")),
            api_key,
            public,
        )

    def names(self) -> str:
        """The accepted Host values, for the start-up line."""
        return "any" if self.hosts is None else ", ".join(sorted(self.hosts))

    def refusal(self, scope: Message) -> tuple[int, str, str, list[tuple[bytes, bytes]]] | None:
        """(status, message, header at fault, extra response headers) for a request refused, else None."""
        headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}
        host = headers.get("host", "")
        if self.hosts is not None and not _listed(host.lower(), self.hosts):
            return (
                421,
                f"Host {host!r} is not a name of this server ({self.names()}): a page of another site may not reach "
                "it through a name of its own (DNS rebinding). Start the server with --allow-host NAME to accept "
                "another name",
                "Host",
                [],
            )
        origin = headers.get("origin")
        if origin is not None and self.origins is not None and not _listed(origin.lower(), self.origins):
            return (
                403,
                f"Origin {origin!r} is another site: a browser page of another site may not call this server. Start "
                "the server with --allow-origin URL to accept it",
                "Origin",
                [],
            )
        if self.api_key is not None and not scope["path"].startswith(self.public):
            given = headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ")
            if not hmac.compare_digest(given.encode(), self.api_key.encode()):
                return (
                    401,
                    "a valid API key is required (Authorization: Bearer KEY or X-API-Key: KEY)",
                    "Authorization",
                    [(b"www-authenticate", b'Bearer realm="runbook"')],
                )
        return None


def _listed(value: str, allowed: frozenset[str]) -> bool:
    """`value` (a Host or an Origin) is allowed as it is, or its name is allowed on any port ('localhost:*')."""
    return value in allowed or f"{value.rsplit(':', 1)[0]}:*" in allowed


def _host_values(host: str, port: int, extra: list[str]) -> set[str]:
    names = {host}
    if host in LOOPBACK:
        names.update(LOOPBACK)
    if host in WILDCARD:
        names.update(LOOPBACK)
        names.update(_machine_names())
    values: set[str] = set()
    for name in names:
        shown = f"[{name}]" if ":" in name else name
        values.add(f"{shown}:{port}".lower())
        if port == 80:
            values.add(shown.lower())
    for name in extra:
        values.add(name.lower())
        if not name.rsplit("]", 1)[-1].count(":"):  # a name without a port: the bound port too
            values.add(f"{name}:{port}".lower())
    return values


def _machine_names() -> set[str]:
    """This machine's host names and addresses: the names a client reaching a wildcard-bound server may use."""
    names = {socket.gethostname(), socket.getfqdn()}
    try:
        for info in socket.getaddrinfo(socket.gethostname(), None):
            names.add(str(info[4][0]))
    except OSError:
        pass
    return {name for name in names if name}


class Guard:
    """Refuses, with a JSON `{"error", "field"}`, every HTTP request its Admission refuses."""

    def __init__(self, app: App, admission: Admission):
        self.app, self.admission = app, admission

    async def __call__(self, scope: Message, receive: Receive, send: Send) -> None:
        refused = self.admission.refusal(scope) if scope["type"] in ("http", "websocket") else None
        if refused is None:
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
        else:
            status, message, field, headers = refused
            await send_error(send, status, message, field=field, headers=headers)


class AccessLog:
    """One access-log line per HTTP request (client, method, path, status, milliseconds); with `refusals_only`,
    only the requests answered with an error (the MCP server logs each tool call instead)."""

    def __init__(self, app: App, *, refusals_only: bool = False):
        self.app, self.refusals_only = app, refusals_only

    async def __call__(self, scope: Message, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start, status = time.perf_counter(), 0

        async def recorded(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, recorded)
        finally:
            if status >= 400 or not self.refusals_only:
                client = scope.get("client")
                access_log.info(
                    '%s "%s %s" %d %.0f ms',
                    client[0] if client else "-",
                    scope["method"],
                    scope["path"],
                    status or 500,
                    (time.perf_counter() - start) * 1000,
                )


async def send_error(
    send: Send, status: int, message: str, *, field: str | None = None, headers: Iterable[tuple[bytes, bytes]] = ()
) -> None:
    """An error response `{"error", "field"}` sent straight over ASGI."""
    body = json.dumps({"error": message, **({"field": field} if field else {})}).encode()
    start = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers]
    await send({"type": "http.response.start", "status": status, "headers": start})
    await send({"type": "http.response.body", "body": body})
