"""`runbook stats`."""

from __future__ import annotations

import json

import click

from ..store import Store


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.pass_context
def stats(ctx: click.Context, as_json: bool) -> None:
    """Show what the store holds: trajectories, states, screenshots, tokens, bytes, per site and outcome.

    Example:

    \b
        runbook stats --json
    """
    figures = Store(ctx.obj["store_path"]).stats()
    if as_json:
        click.echo(json.dumps(figures, indent=2))
        return
    click.echo(f"{'store':<15}{figures['store']}")
    for key in ("trajectories", "states", "screenshots", "tokens", "action_errors", "bytes_on_disk"):
        click.echo(f"{key:<15}{figures[key]:,}")
    click.echo(f"{'time span':<15}{figures['first_time'] or '-'} .. {figures['last_time'] or '-'}")
    click.echo(f"{'per outcome':<15}" + ", ".join(f"{k} {v:,}" for k, v in sorted(figures["per_outcome"].items())))
    click.echo("per site:")
    for site, row in figures["per_site"].items():
        click.echo(
            f"  {site or '(none)':<28}{row['trajectories']:>6,} trajectories {row['states']:>7,} states "
            f"{row['tokens']:>12,} tokens {row['successes']:>6,} successes"
        )
