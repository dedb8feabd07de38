"""`runbook reindex`."""

from __future__ import annotations

import click

from ..store import Store
from .options import WORKERS


@click.command()
@click.option("--workers", type=WORKERS, default=None, help="Processes that build the pool documents (default: 2).")
@click.pass_context
def reindex(ctx: click.Context, workers: int | None) -> None:
    """Rebuild method R's pools (state slices, events, notes) from the stored trajectories.

    `runbook insert` keeps the pools up to date; reindex rebuilds them from scratch, e.g. after an upgrade that
    changes how pools are built. The new pools replace the old ones only once complete.

    Example:

    \b
        runbook --store /data/rb reindex
    """
    from ..pools import reindex as rebuild

    report = rebuild(Store(ctx.obj["store_path"]), workers=workers)
    click.echo(report.summary())
