"""`runbook export lme-v2 OUT`."""

from __future__ import annotations

from pathlib import Path

import click

from ..bench.export import export_lme_v2
from ..store import Store


@click.group()
def export() -> None:
    """Write the store in another benchmark's data layout.

    Example:

    \b
        runbook export lme-v2 lme-data --questions questions.jsonl
    """


@export.command("lme-v2")
@click.argument("out", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--questions",
    "questions",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A question set (JSONL, LongMemEval-V2's question schema) to write with the store; repeatable.",
)
@click.option("--tier", type=click.Choice(["small", "medium"]), default="small", show_default=True)
@click.pass_context
def lme_v2(ctx: click.Context, out: Path, questions: tuple[Path, ...], tier: str) -> None:
    """The store as LongMemEval-V2's data root: questions.jsonl, trajectories.jsonl, haystacks/ and screenshots/.

    Every question's haystack is the whole store, in insertion order. The official harness's
    `data/validate_data.py --data-root OUT` accepts the folder and its built-in memories load it: a state
    without a screenshot names screenshots/no-screenshot.png (an image that says so), a trajectory they would
    refuse is left out, and both are said. OUT must lie outside the store.

    Example:

    \b
        runbook export lme-v2 lme-data --questions ../shared/data/questions_dev_webarena.jsonl
    """
    report = export_lme_v2(Store(ctx.obj["store_path"]), out, questions=list(questions), tier=tier)
    click.echo(report.summary())
