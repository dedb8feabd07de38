"""`runbook sandbox build|check|exec`: the query sandbox, from the command line."""

from __future__ import annotations

import json
import os
import sys

import click

from ..sandbox import NAMES, get_sandbox
from ..sandbox.base import MAX_CALL_TIMEOUT
from .options import Finite

SANDBOX_OPTION = click.option(
    "--sandbox",
    "name",
    type=click.Choice(NAMES),
    default="auto",
    show_default=True,
    help="Backend: docker, bwrap, local (no isolation), or auto.",
)


def _store_path(ctx: click.Context) -> str:
    obj = ctx.find_root().obj or {}
    return obj.get("store_path") or os.path.abspath(os.environ.get("RUNBOOK_STORE", ".runbook"))


@click.group()
def sandbox() -> None:
    """Build, check and try the sandbox a query's tool calls run in (network off, store read-only).

    Example:

    \b
        eval "$(scripts/docker-engine.sh)"
        runbook sandbox build && runbook sandbox check
    """


@sandbox.command()
@click.option(
    "--method",
    type=click.Choice(["auto", "dockerfile", "offline"]),
    default="auto",
    show_default=True,
    help="dockerfile pulls python:3.11-slim-bookworm; offline builds from Debian packages (debootstrap).",
)
@click.option("--force", is_flag=True, help="Rebuild even if the image for the current programs exists.")
def build(method: str, force: bool) -> None:
    """Build the sandbox image for the current sandbox programs and Dockerfile (skipped when up to date).

    Tries the Dockerfile on a pulled Python image first and falls back to an offline build from Debian packages;
    prints which way it took.

    Example:

    \b
        runbook sandbox build --method offline
    """
    from ..sandbox.engine import connect
    from ..sandbox.image import build_image

    report = build_image(connect(), method=method, force=force)
    how = {
        "existing": "up to date",
        "dockerfile": "built from the Dockerfile",
        "offline": "built offline from Debian packages",
    }[report.method]
    click.echo(f"{report.tag}: {how} ({report.detail}) in {report.seconds:.1f} s")


@sandbox.command()
@SANDBOX_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--strict", is_flag=True, help="Also exit 1 when a limit is NOT ENFORCED on this host.")
@click.pass_context
def check(ctx: click.Context, name: str, as_json: bool, strict: bool) -> None:
    """Show the backend, engine and image, then every limit the backend claims with its probe's verdict, every
    limit it cannot enforce here and why, and every agent tool run once.

    Exits 1 when a claimed limit does not hold (with --strict, also when one is NOT ENFORCED).

    Example:

    \b
        runbook sandbox check --sandbox bwrap --json
    """
    from ..checks.sandbox import check_sandbox

    report = check_sandbox(name, _store_path(ctx))
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2))
    else:
        click.echo(f"backend  {report.backend or '-'}" + (f"  ({report.reason})" if report.reason else ""))
        click.echo(f"store    {report.store or '-'}")
        click.echo(f"engine   {report.engine}")
        click.echo(f"image    {report.image or '-'}")
        click.echo(f"bwrap    {report.bwrap}")
        for limit in report.limits:
            click.echo(f"  {limit.status:<13} {limit.name:<52} {limit.detail[:110]}")
        click.echo(report.verdict(), err=bool(report.error))
    ctx.exit(0 if report.passed and not (strict and report.not_enforced) else 1)


@sandbox.command(name="exec", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@SANDBOX_OPTION
@click.option(
    "--timeout",
    type=Finite(0, MAX_CALL_TIMEOUT, min_open=True),
    default=30.0,
    show_default=True,
    help=f"Seconds before the command is killed (at most {MAX_CALL_TIMEOUT:g}: a day).",
)
@click.option("--stdin", "read_stdin", is_flag=True, help="Pass this command's stdin to the sandboxed command.")
@click.argument("cmd", nargs=-1, required=True, type=click.UNPROCESSED)
@click.pass_context
def exec_(ctx: click.Context, name: str, timeout: float, read_stdin: bool, cmd: tuple[str, ...]) -> None:
    """Run one command in a fresh query sandbox over the current store, as the agent would; exit with its code.

    The store is at /store (env RUNBOOK_STORE_DIR); /scratch is the writable working folder. A single argument
    runs through bash, so pipes work.

    Example:

    \b
        runbook sandbox exec -- rg -n -i checkout /store
        runbook sandbox exec -- 'ls /store | head'
        echo 'print(1)' | runbook sandbox exec --stdin -- python3 -
    """
    command: list[str] | str = cmd[0] if len(cmd) == 1 and " " in cmd[0] else list(cmd)
    stdin = sys.stdin.read() if read_stdin else None
    with get_sandbox(name, _store_path(ctx)) as box:
        result = box.exec(command, timeout=timeout, stdin=stdin)
    click.echo(result.output, nl=bool(result.output) and not result.output.endswith("\n"))
    ctx.exit(result.exit_code if 0 <= result.exit_code < 256 else 1)
