"""`runbook serve http` and `runbook serve mcp`."""

from __future__ import annotations

import logging
import sys
from typing import Any

import click

from ..errors import ConfigError, StoreError
from .options import PORT, Finite

MAX_HOURS = 24 * 365.0
TIMEOUT_MAX = 3600.0
log = logging.getLogger("runbook.serve")


def store_options(command):
    """What both servers take about the store: --create, --screenshot-root, --max-sandboxes, --open-max-age and
    --max-open (every number checked when the command line is parsed)."""
    return _apply(
        command,
        click.option(
            "--create",
            is_flag=True,
            help="Start an empty store when there is none at --store (without it a mistyped path is an error).",
        ),
        click.option(
            "--screenshot-root",
            type=click.Path(file_okay=False),
            default=None,
            help="Posted screenshot paths must lie inside this folder (default: screenshots are refused).",
        ),
        click.option(
            "--max-sandboxes",
            default=2,
            show_default=True,
            type=click.IntRange(1, 64),
            help="Method C queries at once; more wait, then fail with 503.",
        ),
        click.option(
            "--open-max-age",
            default=24.0,
            show_default=True,
            type=Finite(0, MAX_HOURS, min_open=True),
            help="Hours an open (streamed) trajectory may go without a step before it is discarded (at most a year).",
        ),
        click.option(
            "--max-open",
            default=100,
            show_default=True,
            type=click.IntRange(1, 100_000),
            help="Open (streamed) trajectories at once; opening one more is a 503 until one is closed or discarded.",
        ),
    )


def network_options(command):
    """What a server on a socket takes (`serve http`, `serve mcp --transport http`): where it listens, who it
    answers (API key, Host and Origin), and what it lets a client hold."""
    return _apply(
        command,
        click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (loopback by default)."),
        click.option(
            "--api-key",
            envvar="RUNBOOK_API_KEY",
            default=None,
            help="Require this key on every request (env RUNBOOK_API_KEY).",
        ),
        click.option(
            "--allow-host",
            multiple=True,
            metavar="NAME",
            help="Also answer requests whose Host is NAME (the server's own names always; '*' for any). Repeatable.",
        ),
        click.option(
            "--allow-origin",
            multiple=True,
            metavar="URL",
            help="Also answer browser requests from this Origin (e.g. https://app.example; '*' for any). Repeatable.",
        ),
        click.option(
            "--max-connections",
            default=256,
            show_default=True,
            type=click.IntRange(1, 100_000),
            help="Connections at once; one more takes the place of the longest idle or slowest one, else gets 503.",
        ),
        click.option(
            "--header-timeout",
            default=10.0,
            show_default=True,
            type=Finite(0, TIMEOUT_MAX, min_open=True),
            help="Seconds a request's headers may take to arrive (then 408 and the connection is closed).",
        ),
        click.option(
            "--body-timeout",
            default=60.0,
            show_default=True,
            type=Finite(0, TIMEOUT_MAX, min_open=True),
            help="Seconds a request's body may take to arrive after its headers (then 408).",
        ),
        click.option(
            "--idle-timeout",
            default=5,
            show_default=True,
            type=click.IntRange(1, int(TIMEOUT_MAX)),
            help="Seconds a connection may wait for its next request.",
        ),
    )


def _apply(command, *decorators):
    for decorator in reversed(decorators):
        command = decorator(command)
    return command


@click.group()
def serve() -> None:
    """Serve the store to agents while they work.

    Example:

    \b
        runbook serve http --port 8765                 # POST /query, POST /trajectories, ... (docs at /docs)
        runbook serve mcp                              # an MCP server on stdio (--transport http for HTTP)
    """


@serve.command("http")
@network_options
@click.option("--port", default=8765, show_default=True, type=PORT, help="Port to listen on.")
@store_options
@click.pass_context
def http(ctx: click.Context, **options: Any) -> None:
    """The HTTP API: POST /query, POST /trajectories (whole or streamed), POST /trajectories/ID/states,
    POST /trajectories/ID/close, GET /trajectories/ID, GET /stats; the schema at /openapi.json, docs at /docs.

    Requests whose Host is not one of the server's names, or whose Origin is another site, are refused (a web page
    elsewhere cannot reach a loopback server through a name of its own); --allow-host and --allow-origin add some.

    Example:

    \b
        runbook serve http --port 8765 &
        curl -s localhost:8765/query -d '{"question": "Where is the Bestsellers report?", "budget": "2k"}' \\
             -H 'Content-Type: application/json'
    """
    try:
        from ..serve import create_app
        from ..serve.http import PUBLIC
    except ImportError as exc:
        raise ConfigError("the HTTP API needs the serve extra: pip install 'runbook[serve]'") from exc

    service = _service(ctx, options)
    try:
        app = create_app(service, admission=_admission(options, public=PUBLIC))
        where = f"http on http://{_shown(options['host'])}:{options['port']} (docs at /docs, schema at /openapi.json)"
        _serve_socket(app, service, options, where)
    finally:
        service.close()


@serve.command("mcp")
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"]),
    default="stdio",
    show_default=True,
    help="stdio: the client starts runbook itself; http: streamable HTTP at http://HOST:PORT/mcp.",
)
@network_options
@click.option("--port", default=8766, show_default=True, type=PORT, help="Port to listen on with --transport http.")
@click.option(
    "--max-sessions",
    default=100,
    show_default=True,
    type=click.IntRange(1, 100_000),
    help="With --transport http: MCP sessions at once; one more is answered 503.",
)
@click.option(
    "--session-timeout",
    default=1800.0,
    show_default=True,
    type=Finite(0, 86_400, min_open=True),
    help="With --transport http: seconds a session may go without a request before it is ended.",
)
@store_options
@click.pass_context
def mcp(ctx: click.Context, **options: Any) -> None:
    """The MCP server: tools query, insert, open_trajectory, append_state, close_trajectory, stats, show;
    resources runbook://stats, runbook://trajectories, runbook://trajectories/ID and .../states/N.

    Over --transport http it takes the HTTP API's --api-key, Host and Origin checks and connection limits.

    Example (an MCP client's config):

    \b
        {"mcpServers": {"runbook": {"command": "runbook",
                                    "args": ["--store", "/path/to/.runbook", "serve", "mcp"]}}}
    """
    try:
        from ..serve.mcp import create_mcp, http_app, quiet_disconnects
    except ImportError as exc:
        raise ConfigError("the MCP server needs the serve extra: pip install 'runbook[serve]'") from exc

    service = _service(ctx, options)
    try:
        _log_to_stderr()  # before the SDK sets up its own logging (it keeps ours when there is one)
        server = create_mcp(service, max_sessions=options["max_sessions"], session_timeout=options["session_timeout"])
        quiet_disconnects()
        if options["transport"] == "stdio":
            _serve_stdio(server, service)
        else:
            where = f"mcp over streamable HTTP on http://{_shown(options['host'])}:{options['port']}/mcp"
            _serve_socket(http_app(server, _admission(options)), service, options, where)
    finally:
        service.close()


def _service(ctx: click.Context, options: dict[str, Any]):
    from ..serve import MemoryService

    try:
        return MemoryService(
            ctx.obj["store_path"],
            create=options["create"],
            screenshot_root=options["screenshot_root"],
            max_sandboxes=options["max_sandboxes"],
            open_max_age_s=options["open_max_age"] * 3600,
            max_open=options["max_open"],
        )
    except StoreError as exc:
        raise StoreError(f"{exc}; or serve a new, empty store with --create") from exc


def _admission(options: dict[str, Any], public: tuple[str, ...] = ()):
    from ..serve.guard import Admission

    return Admission.bound_to(
        options["host"],
        options["port"],
        api_key=options["api_key"],
        allow_hosts=options["allow_host"],
        allow_origins=options["allow_origin"],
        public=public,
    )


def _serve_socket(app, service, options: dict[str, Any], where: str) -> None:
    """Bind first (a port in use is an error before any start-up line), then serve until a stop signal."""
    from ..serve.guard import LOOPBACK
    from ..serve.transport import ServerLimits, bind, serve

    host = options["host"]
    limits = ServerLimits(
        max_connections=options["max_connections"],
        header_timeout=options["header_timeout"],
        body_timeout=options["body_timeout"],
        idle_timeout=options["idle_timeout"],
    )
    sock = bind(host, options["port"])
    _log_to_stderr()
    if host not in LOOPBACK and not options["api_key"]:
        log.warning("serving %s without --api-key: anyone who reaches it can read and write the store", host)
    _started(service, where)
    admission = _admission(options)
    log.info("limits: %s; answers Host %s", limits.describe(), admission.names())
    stopped_by = serve(app, sock, limits)
    log.info("runbook serve stopped%s", f" ({stopped_by})" if stopped_by else "")


def _serve_stdio(server, service) -> None:
    _started(service, "mcp over stdio")
    try:
        server.run("stdio")
    except KeyboardInterrupt as stop:  # Ctrl-C, or SIGTERM / SIGHUP (see cli.stop_signals_as_interrupt)
        _exit_stdio_server(service, getattr(stop, "signal", "SIGINT"))


def _exit_stdio_server(service, signal_name: str) -> None:
    """Stop what the server runs, then exit at once: the MCP SDK reads stdin in a worker thread that no signal
    interrupts, and the interpreter would wait for it (for the client to close stdin) before exiting."""
    import os

    from ..sandbox.cleanup import stop_all

    service.close()
    stop_all()  # a query's sandbox still running in a worker thread
    log.info("runbook serve stopped (%s)", signal_name)
    for stream in (sys.stderr, sys.stdout):
        try:
            stream.flush()
        except (OSError, ValueError):  # the SDK may have closed stdout already
            pass
    os._exit(0)


def _shown(host: str) -> str:
    return f"[{host}]" if ":" in host else host


class _Formatter(logging.Formatter):
    """runbook's line format for every library's lines (uvicorn's, the MCP SDK's) too."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(name)s %(levelname)s %(message)s", "%H:%M:%S")


def _log_to_stderr() -> None:
    """One handler, on stderr (stdout may be the MCP stdio channel), in one format for runbook's own lines
    (start-up, access log, warnings: INFO and up) and the libraries' (uvicorn, mcp: WARNING and up)."""
    root = logging.getLogger()
    if not any(isinstance(h.formatter, _Formatter) for h in root.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(_Formatter())
        root.addHandler(handler)
    root.setLevel(logging.WARNING)
    logging.getLogger("runbook").setLevel(logging.INFO)


def _started(service, what: str) -> None:
    from ..budget import DEFAULT_BUDGET
    from ..memory import DEFAULT_METHOD

    log.info(
        "runbook serve %s: store %s (%d trajectories, %d open, at most %d), default method %s, budget %s",
        what,
        service.store.root,
        len(service.store),
        len(service.journal.ids()),
        service.max_open,
        DEFAULT_METHOD,
        DEFAULT_BUDGET,
    )
