"""`runbook bench run` and `runbook bench report`: thin shells over runbook.bench."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from rich.progress import TaskID


@click.group()
def bench() -> None:
    """Benchmark methods end to end: accuracy against latency, LongMemEval-V2's way.

    `run` answers a config's question sets with each method and budget (one run folder each, resumable);
    `report` puts runs side by side and draws the Pareto chart.

    Example:

    \b
        runbook bench run eval/dev.toml && runbook bench report eval/runs/dev
    """


@bench.command("run")
@click.argument("config", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--jobs",
    type=click.IntRange(1),
    default=None,
    help="Questions at once (default: the config's jobs). Queries of a method that cannot run them at "
    "once still run one at a time.",
)
@click.option("--limit", type=click.IntRange(1), default=None, help="Only the first N questions of each set.")
@click.option("--only", multiple=True, help="Only this method (its label or registry name); repeatable.")
@click.option(
    "--questions",
    "question_files",
    multiple=True,
    type=click.Path(exists=True),
    help="A question file (or LongMemEval-V2 data root) that replaces the config's; repeatable.",
)
@click.option("--fresh", is_flag=True, help="Start the selected runs over instead of resuming them.")
@click.option("--no-reader", is_flag=True, help="Skip the config's reader: reader-free scores only.")
@click.option(
    "--memory-context-max-tokens",
    "max_context",
    type=click.IntRange(1),
    default=None,
    help="Cut each context to this many tokens before the reader, as the harness does (whole items).",
)
@click.option("--rebuild-stores", is_flag=True, help="Build the haystack stores again even when one exists.")
@click.option(
    "--workers",
    type=click.IntRange(1),
    default=None,
    help="Processes that stage trajectories when a store is built (default: 2, as for insert).",
)
@click.option(
    "--ray",
    "ray_address",
    is_flag=False,
    flag_value="auto",
    default=None,
    metavar="[ADDRESS]",
    help="Run the questions on a Ray cluster: the one started on this machine (or RAY_ADDRESS), or the one at "
    "ADDRESS (HOST:PORT). Every node must reach the data, stores and runs by the same path. Needs the extra: "
    "pip install 'runbook[ray]'.",
)
def run(config, jobs, limit, only, question_files, fresh, no_reader, max_context, rebuild_stores, workers, ray_address):
    """Run the bench CONFIG (TOML): every method at every budget over the question sets.

    Each (method, budget) writes eval/runs/<name>/<method>-<budget>/: config.json, per_question.jsonl (one
    record per question, appended as it finishes) and aggregated_metrics.json (LongMemEval-V2's field names).
    A killed run continues where it stopped. One store per distinct haystack is built once (keyed by its
    content) and reused; `store = PATH` in the config asks every question over that existing store instead.
    With a [reader] in the config, each context is answered and graded as LongMemEval-V2 grades it. With
    --ray, each store is prepared by a Ray task and each (haystack, method, budget) is a Ray actor answering
    its questions; records come back to this process, which writes the same run folders; a lost worker's
    questions are retried by Ray.

    Example:

    \b
        runbook bench run eval/dev.toml
        runbook bench run eval/dev.toml --only R --limit 5 --fresh
        runbook bench run eval/dev.toml --ray 127.0.0.1:6379
        runbook generate /tmp/gen --trajectories 80 --no-screenshots && \\
            runbook bench run eval/generated.toml --questions /tmp/gen
    """
    from rich.console import Console

    from ..bench.config import load_config
    from ..bench.report import build_report, kinds_table, table
    from ..bench.runner import RunOptions, run_bench

    cfg = load_config(config)
    if max_context and cfg.reader:
        cfg.reader.memory_context_max_tokens = max_context
    options = RunOptions(
        jobs=jobs,
        limit=limit,
        only=list(only),
        questions=[Path(q) for q in question_files],
        fresh=fresh,
        reader=not no_reader,
        rebuild_stores=rebuild_stores,
        insert_workers=workers,
        ray=ray_address,
    )
    console = Console(stderr=True)
    with _RichProgress(console) as progress:
        results = run_bench(cfg, options, progress)
    folders = [r.folder for r in results]
    built = build_report(folders)
    _console().print(table(built))
    if kinds_table(built) is not None:
        _console().print(kinds_table(built))
    click.echo(f"runs: {', '.join(str(f) for f in folders)}")
    click.echo(f"chart: runbook bench report {cfg.runs_dir / cfg.name}")


@bench.command("report")
@click.argument("runs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False))
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    default=None,
    help="Folder for pareto.png and pareto.csv (default: the first RUN folder).",
)
@click.option(
    "--score",
    type=click.Choice(["auto", "accuracy", "phrases", "evidence"]),
    default="auto",
    show_default=True,
    help="auto: reader accuracy when every run has it, else answer phrases in context.",
)
@click.option(
    "--tier",
    type=click.Choice(["small", "medium"]),
    default="small",
    show_default=True,
    help="Which published LongMemEval-V2 points to show and compute the LAFS gain against.",
)
@click.option("--no-chart", is_flag=True, help="Table and CSV only (no matplotlib needed).")
def report(runs, out, score, tier, no_chart):
    """Compare RUNS (run folders, or folders holding them): a table, a Pareto chart (PNG + CSV) and LAFS.

    A run without the score asked for (reader accuracy of a run without a reader) is left off, and a line says
    so. The chart puts each run's score (with n and a 95% interval) against its average query latency (log axis),
    draws the frontier and labels every point; only for reader accuracy does it show LongMemEval-V2's published
    points (reader accuracy too) and the LAFS gain over them. LAFS averages the best
    score reachable within a latency budget over budgets log-uniform in [1 s, 200 s].

    Example:

    \b
        runbook bench report eval/runs/dev
        runbook bench report eval/runs/dev/r-8k eval/runs/dev/c-offline-8k --out /tmp/chart --score evidence
    """
    from ..bench.report import build_report, kinds_table, table, write_outputs

    result = build_report(list(runs), score)
    _console().print(table(result))
    if kinds_table(result) is not None:
        _console().print(kinds_table(result))
    if result.left_out_line():
        click.echo(result.left_out_line())
    gain = result.lafs_gain(tier)
    if gain is None:
        click.echo(
            f"LAFS ({result.score_name}, 1-200 s): {result.lafs:.2f}, a reader-free figure: no gain over "
            f"LongMemEval-V2's published frontier is given, as that frontier is reader accuracy"
        )
    else:
        click.echo(
            f"LAFS ({result.score_name}, 1-200 s): {result.lafs:.2f}; gain over the published LongMemEval-V2 "
            f"{tier} frontier: {gain:+.2f} (the leaderboard's number only on LongMemEval-V2's own questions)"
        )
    files = write_outputs(result, Path(out or runs[0]), chart=not no_chart, tier=tier)
    for kind, path in files.items():
        click.echo(f"{kind}: {path}")


def _console():
    """stdout's console; when it is not a terminal (a file, a pipe) the table keeps its full width."""
    import sys

    from rich.console import Console

    return Console(width=None if sys.stdout.isatty() else 230)


class _RichProgress:
    """The runner's progress on stderr: rich bars on a terminal (one per run, the store builds as notes); on a
    file or a pipe, one plain line per note and per question answered, so a log shows the run as it goes."""

    def __init__(self, console) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.console = console
        self.bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            disable=not console.is_terminal,
        )
        self.tasks: dict[str, TaskID] = {}
        self.started = time.monotonic()

    def __enter__(self):
        self.bar.__enter__()
        return self

    def __exit__(self, *exc):
        self.bar.__exit__(*exc)

    def _line(self, text: str) -> None:
        click.echo(f"[{time.monotonic() - self.started:7.1f} s] {text}", err=True)

    def note(self, text: str) -> None:
        if self.console.is_terminal:
            self.console.print(f"[dim]{text}[/dim]")
        else:
            self._line(text)

    def begin(self, label: str, total: int, done: int) -> None:
        if label in self.tasks:
            before = self.bar.tasks[self.tasks[label]].total
            assert before is not None  # every bar is added with a total
            self.bar.update(self.tasks[label], total=before + total, advance=done)
        else:
            self.tasks[label] = self.bar.add_task(label, total=total, completed=done)
        if not self.console.is_terminal:
            task = self.bar.tasks[self.tasks[label]]
            self._line(f"{label}: {int(task.completed)} of {int(task.total or 0)} questions done, starting")

    def advance(self, label: str) -> None:
        self.bar.advance(self.tasks[label])
        if not self.console.is_terminal:
            task = self.bar.tasks[self.tasks[label]]
            self._line(f"{label}: {int(task.completed)}/{int(task.total or 0)}")
