"""`runbook serve http` and `runbook serve mcp`."""

from __future__ import annotations

import click

from ..errors import ConfigError


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
@click.option(
    "--screenshot-root",
    type=click.Path(file_okay=False),
    default=None,
    help="Posted screenshot paths must lie inside this folder (default: screenshots are refused).",
)
@click.option(
    "--max-sandboxes",
    default=2,
    show_default=True,
    type=int,
    help="Method C queries at once; more wait, then fail with 503.",
)
@click.pass_context
def http(
    ctx: click.Context, host: str, port: int, api_key: str | None, screenshot_root: str | None, max_sandboxes: int
) -> None:
    """The HTTP API: POST /query, POST /trajectories (whole or streamed), POST /trajectories/ID/states,
    POST /trajectories/ID/close, GET /trajectories/ID, GET /stats.

    Example:

    \b
        runbook serve http --port 8765 &
        curl -s localhost:8765/query -d '{"question": "Where is the Bestsellers report?", "budget": "2k"}' \\
             -H 'Content-Type: application/json'
    """
    try:
        import uvicorn
    except ImportError as exc:
        raise ConfigError("the HTTP API needs the serve extra: pip install 'runbook[serve]'") from exc
    from ..serve import MemoryService, create_app

    if host not in ("127.0.0.1", "localhost", "::1") and not api_key:
        click.echo(
            f"warning: serving {host} without --api-key: anyone who reaches it can read and write the store", err=True
        )
    service = MemoryService(ctx.obj["store_path"], screenshot_root=screenshot_root, max_sandboxes=max_sandboxes)
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
@click.option(
    "--screenshot-root",
    type=click.Path(file_okay=False),
    default=None,
    help="Posted screenshot paths must lie inside this folder (default: screenshots are refused).",
)
@click.option(
    "--max-sandboxes", default=2, show_default=True, type=int, help="Method C queries at once; more wait, then fail."
)
@click.pass_context
def mcp(
    ctx: click.Context, transport: str, host: str, port: int, screenshot_root: str | None, max_sandboxes: int
) -> None:
    """The MCP server: tools query, insert, open_trajectory, append_state, close_trajectory, stats, show;
    resources runbook://trajectories/ID and runbook://trajectories/ID/states/N.

    Example (an MCP client's config):

    \b
        {"mcpServers": {"runbook": {"command": "runbook",
                                    "args": ["--store", "/path/to/.runbook", "serve", "mcp"]}}}
    """
    try:
        from ..serve.mcp import create_mcp
    except ImportError as exc:
        raise ConfigError("the MCP server needs the serve extra: pip install 'runbook[serve]'") from exc
    from ..serve import MemoryService

    service = MemoryService(ctx.obj["store_path"], screenshot_root=screenshot_root, max_sandboxes=max_sandboxes)
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
