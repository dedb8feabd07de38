"""`runbook generate`: write a synthetic Acme Admin dataset (a thin wrapper over runbook.simulate)."""

from __future__ import annotations

import time

import click


@click.command("generate")
@click.argument("out_dir", type=click.Path(file_okay=False))
@click.option("--seed", type=int, default=7, show_default=True, help="Seed of the world and the agents.")
@click.option(
    "--trajectories",
    "n",
    type=click.IntRange(1),
    default=200,
    show_default=True,
    help="How many trajectories to record.",
)
@click.option(
    "--screenshots/--no-screenshots",
    default=True,
    show_default=True,
    help="Render an 800x500 PNG per state (the slow part).",
)
def generate(out_dir: str, seed: int, n: int, screenshots: bool) -> None:
    """Generate synthetic web-agent trajectories and questions with gold answers.

    A seeded simulation of a small shop admin ("Acme Admin": products, orders, customers, settings,
    a Bestsellers report) runs look-ups, edits, multi-step procedures, tasks that trip over gotchas
    and infeasible requests. OUT_DIR receives trajectories.jsonl, questions.jsonl (all seven
    LongMemEval-V2 question types, gold answers and evidence states) and screenshots/. The same seed
    always gives the same files.

    \b
    Example:
      runbook generate trajectories --seed 7 --trajectories 8
      runbook generate /tmp/tune --trajectories 500 --no-screenshots
    """
    from ..simulate import write_dataset

    t = time.time()
    c = write_dataset(out_dir, seed=seed, n=n, screenshots=screenshots)
    kinds = ", ".join(f"{k} {v}" for k, v in c["by_type"].items())
    click.echo(
        f"{c['trajectories']} trajectories, {c['states']} states, {c['screenshots']} screenshots, "
        f"{c['questions']} questions ({kinds}) -> {out_dir} in {time.time() - t:.1f}s"
    )
