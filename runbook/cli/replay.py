"""`runbook replay`."""

from __future__ import annotations

import json

import click

from ..agent.transcript import ReplayOptions, latest_transcript, read_transcript, render_replay


@click.command()
@click.argument("transcript", required=False)
@click.option("--full", is_flag=True, help="Print every tool output whole (default: the first 20 lines).")
@click.option(
    "--lines", type=click.IntRange(0), default=20, show_default=True, help="Lines of each tool output to print."
)
@click.option("--json", "as_json", is_flag=True, help="Print the raw JSONL records.")
def replay(transcript, full, lines, as_json):
    """Show what the agent did in one query: each call, its output, timings, tokens, and why it stopped.

    TRANSCRIPT is a .jsonl file written by a method-c query (its path is in the context's meta); without it,
    the newest transcript is shown.

    Example:

    \b
        runbook replay
        runbook replay ~/.cache/runbook/transcripts/20251216T064736Z-what-is-the-top-seller.jsonl --full
    """
    path = transcript or latest_transcript()
    records = read_transcript(path)
    if as_json:
        for record in records:
            click.echo(json.dumps(record, ensure_ascii=False))
        return
    click.echo(f"transcript: {path}")
    for block in render_replay(records, ReplayOptions(output_lines=None if full else lines)):
        click.echo(block)
