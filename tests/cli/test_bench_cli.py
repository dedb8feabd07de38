"""`runbook bench run` and `runbook bench report` through the real CLI, on a set `runbook generate` wrote."""

from __future__ import annotations

import json
import socket
import sys

from click.testing import CliRunner

from runbook.cli import main
from runbook.simulate import write_dataset

CONFIG = """
name = "gen"
questions = ["{questions}"]
budgets = ["2k"]

[[methods]]
label = "R"
method = "r"

[[methods]]
label = "no memory"
method = "none"
"""


def test_a_generated_set_runs_through_the_bench_unchanged(tmp_path, clean_env):
    write_dataset(tmp_path / "gen", seed=3, n=12, screenshots=False)
    config = tmp_path / "eval" / "gen.toml"
    config.parent.mkdir()
    config.write_text(CONFIG.format(questions=tmp_path / "gen"))
    result = CliRunner().invoke(main, ["bench", "run", str(config), "--limit", "12", "--workers", "1"])
    assert result.exit_code == 0, result.output
    assert "R 2k" in result.output and "no memory 2k" in result.output
    run = tmp_path / "eval" / "runs" / "gen" / "r-2k"
    metrics = json.loads((run / "aggregated_metrics.json").read_text())
    assert metrics["count"] == 12 and metrics["errors"] == 0 and metrics["diagnostics"]["write_failures"] == 0
    assert metrics["overall"]["overall_full_set"] is None  # no reader in this config
    assert metrics["reader_free"]["answer_phrases"] > 0

    report = CliRunner().invoke(main, ["bench", "report", str(run.parent), "--out", str(tmp_path / "chart")])
    assert report.exit_code == 0, report.output
    assert "LAFS (answer phrases in context" in report.output and "no gain over" in report.output
    assert "gain over the published" not in report.output  # a reader-free figure against reader accuracy
    assert (tmp_path / "chart" / "pareto.png").stat().st_size > 0
    assert (tmp_path / "chart" / "pareto.csv").read_text().count("\n") == 1 + 2  # header and 2 runs, no published


def test_report_of_nothing_says_how_to_get_runs(tmp_path):
    result = CliRunner().invoke(main, ["bench", "report", str(tmp_path)])
    assert result.exit_code == 1 and "runbook bench run CONFIG" in result.output


def test_a_bad_config_names_the_key(tmp_path):
    config = tmp_path / "bad.toml"
    config.write_text('questions = ["q.jsonl"]\nmethods = [{method = "nope"}]\n')
    result = CliRunner().invoke(main, ["bench", "run", str(config)])
    assert result.exit_code == 1 and "unknown method 'nope'" in result.output


def test_the_progress_bars_draw_on_a_terminal(tmp_path, clean_env):
    import io

    from rich.console import Console

    from runbook.bench.config import load_config
    from runbook.bench.runner import RunOptions, run_bench
    from runbook.cli.bench import _RichProgress

    write_dataset(tmp_path / "gen", seed=3, n=12, screenshots=False)
    config = tmp_path / "gen.toml"
    config.write_text(CONFIG.format(questions=tmp_path / "gen"))
    screen = io.StringIO()
    with _RichProgress(Console(file=screen, force_terminal=True, width=100)) as progress:
        run_bench(load_config(config), RunOptions(limit=3, insert_workers=1), progress)
        bars = {task.description: (task.completed, task.total) for task in progress.bar.tasks}
    assert bars == {"R 2k": (3, 3), "no memory 2k": (3, 3)}
    assert "store for gen" in screen.getvalue()


def test_a_run_not_on_a_terminal_prints_each_question_as_it_is_answered(tmp_path, clean_env):
    """Item 7 of issue 24: `bench run` printed nothing until the end when its output was a file or a pipe."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    write_dataset(tmp_path / "gen", seed=3, n=12, screenshots=False)
    config = tmp_path / "gen.toml"
    config.write_text(CONFIG.format(questions=tmp_path / "gen"))
    root = Path(__file__).resolve().parents[2]
    log = tmp_path / "bench.log"
    with open(log, "w") as fh:
        run = subprocess.Popen(
            [sys.executable, "-m", "runbook.cli", "bench", "run", str(config), "--limit", "3", "--workers", "1"],
            stdout=subprocess.DEVNULL,
            stderr=fh,
            env={**os.environ, "PYTHONPATH": str(root)},
            cwd=tmp_path,
        )
        assert run.wait(300) == 0, log.read_text()
    lines = log.read_text().splitlines()
    assert any("store for gen" in line for line in lines)
    assert [line.split("] ", 1)[1] for line in lines if "R 2k: " in line and "/" in line] == [
        "R 2k: 1/3",
        "R 2k: 2/3",
        "R 2k: 3/3",
    ]


def test_ray_without_the_extra_says_how_to_get_it(tmp_path, monkeypatch):
    """A plain install has no Ray: `--ray` names the extra to install, exits 1 and writes no run folder."""
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError, as without the extra
    write_dataset(tmp_path / "gen", seed=3, n=4, screenshots=False)
    config = tmp_path / "gen.toml"
    config.write_text(CONFIG.format(questions=tmp_path / "gen"))
    result = CliRunner().invoke(main, ["bench", "run", str(config), "--ray"])
    assert result.exit_code == 1, result.output
    assert "pip install 'runbook[ray]'" in result.output
    assert not (tmp_path / "runs").exists()
    local = CliRunner().invoke(main, ["bench", "run", str(config), "--only", "R", "--workers", "1"])
    assert local.exit_code == 0, local.output  # the same install runs the bench in this process


def test_ray_with_no_cluster_at_the_address_says_so(tmp_path):
    """`--ray HOST:PORT` where nothing listens fails at once (Ray itself would wait minutes) and writes nothing."""
    write_dataset(tmp_path / "gen", seed=3, n=4, screenshots=False)
    config = tmp_path / "gen.toml"
    config.write_text(CONFIG.format(questions=tmp_path / "gen"))
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]  # bound, never listening: a connection is refused
        result = CliRunner().invoke(main, ["bench", "run", str(config), "--ray", f"127.0.0.1:{port}"])
    assert result.exit_code == 1, result.output
    assert f"no Ray cluster answers at 127.0.0.1:{port}" in result.output
    assert not (tmp_path / "runs").exists()
