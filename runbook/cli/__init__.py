"""The `runbook` command: a thin click shell over the library. Each subcommand lives in its own module."""

from __future__ import annotations

import importlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

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
    ("store", "store_group"),
]


class RunbookGroup(click.Group):
    """Turns a RunbookError into one clear line on stderr and exit code 1 instead of a traceback, and SIGTERM and
    SIGHUP into what Ctrl-C does."""

    def invoke(self, ctx):
        with stop_signals_as_interrupt():
            try:
                return super().invoke(ctx)
            except RunbookError as exc:
                click.echo(f"error: {exc}", err=True)
                sys.exit(1)


class Interrupted(KeyboardInterrupt):
    """A stop signal turned into what Ctrl-C raises; `signal` is its name ('SIGTERM')."""

    def __init__(self, signal_name: str):
        super().__init__(signal_name)
        self.signal = signal_name


STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


@contextmanager
def stop_signals_as_interrupt() -> Iterator[None]:
    """SIGTERM (what `kill`, systemd and `docker stop` send) and SIGHUP (a closed terminal) end a command as Ctrl-C
    does: a KeyboardInterrupt unwinds it, so its `finally` blocks and exit hooks stop its sandboxes and remove its
    temporary folders. Left at their defaults, both killed `serve http` on the spot, leaving the warm container and
    the `runbook-serve-*` folder behind. A signal the command was started to ignore (`nohup`) stays ignored."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers belong to the main thread (a command invoked from another thread keeps its own)
        return
    previous = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    for sig, handler in previous.items():
        if handler is not signal.SIG_IGN:
            signal.signal(sig, _interrupt)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)


def _interrupt(signum, frame) -> None:
    raise Interrupted(signal.Signals(signum).name)


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
