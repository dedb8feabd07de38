"""The `runbook` command: a thin click shell over the library. Each subcommand lives in its own module."""

from __future__ import annotations

import importlib
import os
import sys

import click

from ..errors import RunbookError

# (module, attribute) of each subcommand; a command is one short wrapper over a library call
COMMANDS = [
    ("insert", "insert"),
    ("stats", "stats"),
    ("query", "query"),
    ("generate", "generate"),
    ("sandbox", "sandbox"),
    ("reindex", "reindex"),
    ("answer", "answer"),
    ("replay", "replay"),
    ("config", "config"),
    ("bench", "bench"),
    ("export", "export"),
    ("serve", "serve"),
]


class RunbookGroup(click.Group):
    """Turns a RunbookError into one clear line on stderr and exit code 1 instead of a traceback."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except RunbookError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(1)


@click.group(cls=RunbookGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--store",
    "store_path",
    envvar="RUNBOOK_STORE",
    default=".runbook",
    show_default=True,
    type=click.Path(file_okay=False),
    help="The store folder (env RUNBOOK_STORE).",
)
@click.version_option(package_name="runbook")
@click.pass_context
def main(ctx: click.Context, store_path: str) -> None:
    """runbook: a long-term memory for web agents.

    Insert agent trajectories into a plain-file store, then query it for cited evidence cut to a token budget.

    Example:

    \b
        runbook insert trajectories/ && runbook stats
    """
    ctx.ensure_object(dict)
    ctx.obj["store_path"] = os.path.abspath(store_path)


for _module, _attr in COMMANDS:
    main.add_command(getattr(importlib.import_module(f"{__name__}.{_module}"), _attr))
