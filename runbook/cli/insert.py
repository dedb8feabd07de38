"""`runbook insert`."""

from __future__ import annotations

import sys

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from ..ingest import InsertReport, insert_paths
from ..pools import insert_listener
from ..store import Store
from ..trajectory.limits import ReadLimits, parse_size
from .options import WORKERS


def _size(_ctx: click.Context, param: click.Parameter, value: str) -> int:
    try:
        return parse_size(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param=param) from None


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--replace", is_flag=True, help="Overwrite a stored trajectory whose id now holds different content.")
@click.option(
    "--skip-invalid",
    is_flag=True,
    help="Insert the valid trajectories and report each invalid one (the exit code is still non-zero).",
)
@click.option("--workers", type=WORKERS, default=None, help="Processes that render and count tokens (default: 2).")
@click.option(
    "--screenshot-root",
    type=click.Path(file_okay=False),
    default=None,
    help="Screenshots must lie inside this folder instead of inside the folder of the file naming them.",
)
@click.option(
    "--max-file-bytes",
    "max_file",
    default="4G",
    show_default=True,
    callback=_size,
    help="Refuse a source file that holds more than this once decompressed (K, M, G: powers of 1024).",
)
@click.option(
    "--max-line-bytes",
    "max_line",
    default="64M",
    show_default=True,
    callback=_size,
    help="Refuse a JSONL line (one trajectory), or a whole .json document or step file, larger than this.",
)
@click.pass_context
def insert(
    ctx: click.Context,
    paths: tuple[str, ...],
    replace: bool,
    skip_invalid: bool,
    workers: int | None,
    screenshot_root: str | None,
    max_file: int,
    max_line: int,
) -> None:
    """Insert trajectory files or folders into the store.

    Formats are detected per file or folder: this project's JSONL(.gz), LongMemEval-V2 JSON/JSONL, BrowserGym /
    AgentLab result folders, browser-use history folders. Inserting the same trajectory again changes nothing.
    Screenshots must be images inside the folder of the file that names them (or inside --screenshot-root).
    A source is read as it decompresses and refused once it passes --max-file-bytes or --max-line-bytes.

    Example:

    \b
        runbook insert trajectories/
        runbook --store /data/rb insert runs/*.jsonl.gz --skip-invalid
    """
    err = Console(stderr=True)
    store = Store(ctx.obj["store_path"], create=True)
    with Progress(
        TextColumn("[bold]insert"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err,
        transient=True,
        disable=not err.is_terminal,
    ) as bar:
        task = bar.add_task("insert", total=None)
        report = insert_paths(
            store,
            paths,
            replace=replace,
            skip_invalid=skip_invalid,
            workers=workers,
            screenshot_root=screenshot_root,
            progress=lambda done, total: bar.update(task, completed=done, total=total),
            listeners=[insert_listener(store)],
            limits=ReadLimits(file_bytes=max_file, line_bytes=max_line),
        )
    _say(report, skip_invalid=skip_invalid)


def _say(report: InsertReport, *, skip_invalid: bool) -> None:
    """Each invalid source and refusal on stderr, then the summary; exit 1 unless everything went in."""
    for error in report.invalid:
        click.echo(f"invalid: {error}", err=True)
    for refusal in report.refusals:
        click.echo(f"refused: {refusal.message}", err=True)
    if report.invalid and not skip_invalid:
        click.echo(
            f"error: {len(report.invalid)} invalid trajectory source(s); nothing was inserted "
            "(fix them, or pass --skip-invalid to insert the valid ones)",
            err=True,
        )
        sys.exit(1)
    click.echo(report.summary())
    if not report.ok:
        sys.exit(1)
