"""`runbook serve http` and `runbook serve mcp`."""

from __future__ import annotations

import logging
import sys

import click

from ..errors import ConfigError, StoreError

OPEN_MAX_AGE_HELP = "Hours an open (streamed) trajectory may go without a step before it is discarded."


def store_options(command):
    """--create, --screenshot-root, --max-sandboxes and --open-max-age, as both servers take them."""
    decorators = [
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
            type=int,
            help="Method C queries at once; more wait, then fail with 503.",
        ),
        click.option("--open-max-age", default=24.0, show_default=True, type=float, help=OPEN_MAX_AGE_HELP),
    ]
    for decorator in reversed(decorators):
        command = decorator(command)
    return command


def _service(ctx: click.Context, create: bool, screenshot_root: str | None, max_sandboxes: int, open_max_age: float):
    from ..serve import MemoryService

    try:
        return MemoryService(
            ctx.obj["store_path"],
            create=create,
            screenshot_root=screenshot_root,
            max_sandboxes=max_sandboxes,
            open_max_age_s=open_max_age * 3600,
        )
    except StoreError as exc:
        raise StoreError(f"{exc}; or serve a new, empty store with --create") from exc


def _log_to_stderr() -> None:
    """runbook's own lines (start-up, access log, warnings) on stderr: stdout may be the MCP stdio channel."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s", "%H:%M:%S"))
    root = logging.getLogger("runbook")
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    root.propagate = False  # FastMCP puts its own handler on the root logger: each line once


def _started(service, what: str) -> None:
    from ..budget import DEFAULT_BUDGET
    from ..memory import DEFAULT_METHOD

    logging.getLogger("runbook.serve").info(
        "runbook serve %s: store %s (%d trajectories, %d open), default method %s, budget %s",
        what,
        service.store.root,
        len(service.store),
        len(service.journal.ids()),
        DEFAULT_METHOD,
        DEFAULT_BUDGET,
    )


@click.group()
def serve() -> None:
    """Serve the store to agents while they work.

    Example:

    \b
        runbook serve http --port 8765                 # POST /query, POST /trajectories, ... (docs at /docs)
        runbook serve mcp                              # an MCP server on stdio (--transport http for HTTP)
    """


@serve.command("http")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (loopback by default).")
@click.option("--port", default=8765, show_default=True, type=int)
@click.option(
    "--api-key", envvar="RUNBOOK_API_KEY", default=None, help="Require this key on every request (env RUNBOOK_API_KEY)."
)
@store_options
@click.pass_context
def http(
    ctx: click.Context,
    host: str,
    port: int,
    api_key: str | None,
    create: bool,
    screenshot_root: str | None,
    max_sandboxes: int,
    open_max_age: float,
) -> None:
    """The HTTP API: POST /query, POST /trajectories (whole or streamed), POST /trajectories/ID/states,
    POST /trajectories/ID/close, GET /trajectories/ID, GET /stats; the schema at /openapi.json, docs at /docs.

    Example:

    \b
        runbook serve http --port 8765 &
        curl -s localhost:8765/query -d '{"question": "Where is the Bestsellers report?", "budget": "2k"}' \\
             -H 'Content-Type: application/json'
    """
    try:
        import uvicorn

        from ..serve import create_app
    except ImportError as exc:
        raise ConfigError("the HTTP API needs the serve extra: pip install 'runbook[serve]'") from exc

    if host not in ("127.0.0.1", "localhost", "::1") and not api_key:
        click.echo(
            f"warning: serving {host} without --api-key: anyone who reaches it can read and write the store", err=True
        )
    service = _service(ctx, create, screenshot_root, max_sandboxes, open_max_age)
    _log_to_stderr()
    _started(service, f"http on http://{host}:{port} (docs at /docs, schema at /openapi.json)")
    try:
        uvicorn.run(create_app(service, api_key=api_key), host=host, port=port, log_level="warning")
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
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind with --transport http.")
@click.option("--port", default=8766, show_default=True, type=int)
@store_options
@click.pass_context
def mcp(
    ctx: click.Context,
    transport: str,
    host: str,
    port: int,
    create: bool,
    screenshot_root: str | None,
    max_sandboxes: int,
    open_max_age: float,
) -> None:
    """The MCP server: tools query, insert, open_trajectory, append_state, close_trajectory, stats, show;
    resources runbook://stats, runbook://trajectories, runbook://trajectories/ID and .../states/N.

    Example (an MCP client's config):

    \b
        {"mcpServers": {"runbook": {"command": "runbook",
                                    "args": ["--store", "/path/to/.runbook", "serve", "mcp"]}}}
    """
    try:
        from ..serve.mcp import create_mcp, quiet_disconnects
    except ImportError as exc:
        raise ConfigError("the MCP server needs the serve extra: pip install 'runbook[serve]'") from exc

    service = _service(ctx, create, screenshot_root, max_sandboxes, open_max_age)
    _log_to_stderr()
    where = "stdio" if transport == "stdio" else f"streamable HTTP on http://{host}:{port}/mcp"
    _started(service, f"mcp over {where}")
    quiet_disconnects()
    try:
        create_mcp(service, host=host, port=port).run("stdio" if transport == "stdio" else "streamable-http")
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM (see cli.sigterm_as_interrupt)
        if transport == "stdio":
            _exit_stdio_server(service)
        raise
    finally:
        service.close()


def _exit_stdio_server(service) -> None:
    """Stop what the server runs, then exit at once: the MCP SDK reads stdin in a worker thread that no signal
    interrupts, and the interpreter would wait for it (for the client to close stdin) before exiting."""
    import os
    import sys

    from ..sandbox.cleanup import stop_all

    service.close()
    stop_all()  # a query's sandbox still running in a worker thread
    click.echo("Aborted!", err=True)
    sys.stdout.flush()
    os._exit(130)
