"""`runbook bench report` as a library: runs found, scored, tabled, charted (a real PNG) and written as CSV."""

from __future__ import annotations

import csv
import json

import pytest
from rich.console import Console

from runbook.bench.lafs import PUBLISHED, lafs
from runbook.bench.report import build_report, table, write_outputs
from runbook.errors import ConfigError


def write_run(folder, label, *, latency, phrases, accuracy=None, count=10):
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"label": label}))
    metrics = {
        "name": f"t/{folder.name}",
        "label": label,
        "count": count,
        "budget": 8000,
        "method": "x",
        "overall": {"overall_full_set": accuracy},
        "memory_query": {"avg_seconds": latency, "p50_seconds": latency, "p95_seconds": 2 * latency},
        "reader_free": {"answer_phrases": phrases, "evidence": phrases / 2},
        "memory_context": {"avg_final_tokens": 7000.0},
        "diagnostics": {
            "read_failures": 3,
            "utilization_failures": 0,
            "staleness_failures": 1,
            "write_failures": 0,
            "store_write_failures": 0,
        },
    }
    (folder / "aggregated_metrics.json").write_text(json.dumps(metrics))


@pytest.fixture
def runs(tmp_path):
    write_run(tmp_path / "runs" / "r-8k", "R 8k", latency=0.2, phrases=0.8)
    write_run(tmp_path / "runs" / "c-8k", "C 8k", latency=2.0, phrases=0.75)
    write_run(tmp_path / "runs" / "none-8k", "none 8k", latency=0.00001, phrases=0.0)
    return tmp_path / "runs"


def test_reader_free_runs_are_scored_by_answer_phrases(runs):
    report = build_report([runs])
    assert report.score == "phrases" and [r.label for r in report.runs] == ["C 8k", "none 8k", "R 8k"]
    assert [p.accuracy for p in report.points] == [75.0, 0.0, 80.0]
    assert report.frontier_names() == {"none 8k", "R 8k"}  # C is slower and worse than R
    assert report.lafs == pytest.approx(80.0)  # R is under 1 s, so it holds over the whole range
    # R beats every published point and is faster than all: with them, 80 holds over the whole range
    assert report.lafs_gain == pytest.approx(80.0 - lafs(PUBLISHED["small"]))
    rendered = Console(width=200, record=True)
    rendered.print(table(report))
    rows = [line for line in rendered.export_text().splitlines() if line.startswith("│")]
    assert "R 8k" in rows[0] and "80.0" in rows[0] and "3/0/1/0" in rows[0]  # best score first
    assert "none 8k" in rows[-1]


def test_reader_accuracy_is_the_score_when_every_run_has_it(tmp_path):
    write_run(tmp_path / "a", "A", latency=30.0, phrases=0.5, accuracy=0.6)
    write_run(tmp_path / "b", "B", latency=120.0, phrases=0.9, accuracy=0.8)
    report = build_report([tmp_path / "a", tmp_path / "b"])
    assert report.score == "accuracy" and [p.accuracy for p in report.points] == [60.0, 80.0]
    assert build_report([tmp_path], score="evidence").points[0].accuracy == 25.0


def test_chart_and_csv(runs, tmp_path):
    files = write_outputs(build_report([runs]), tmp_path / "out")
    assert files["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and files["png"].stat().st_size > 20_000
    rows = list(csv.DictReader(files["csv"].open()))
    ours = {r["label"]: r for r in rows if r["source"] == "run"}
    assert ours["R 8k"]["frontier"] == "True" and ours["C 8k"]["frontier"] == "False"
    assert float(ours["R 8k"]["avg_latency_s"]) == 0.2 and ours["R 8k"]["read_failures"] == "3"
    published = [r for r in rows if r["source"].startswith("LongMemEval-V2")]
    assert {r["label"] for r in published} == {p.name for p in PUBLISHED["small"]}


def test_no_runs_is_an_error_that_says_what_to_do(tmp_path):
    with pytest.raises(ConfigError, match="runbook bench run"):
        build_report([tmp_path])


def test_without_matplotlib_the_chart_says_how_to_get_it(runs, tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if it were not installed
    with pytest.raises(ConfigError, match=r"pip install 'runbook\[bench\]'"):
        write_outputs(build_report([runs]), tmp_path / "out")
    assert (tmp_path / "out" / "pareto.csv").exists()  # the CSV needs nothing more


def test_a_run_still_going_is_read_from_its_records(runs):
    from runbook.bench.metrics import aggregate

    going = runs / "bm25-8k"
    going.mkdir()
    (going / "config.json").write_text(json.dumps({"name": "t/bm25-8k", "label": "BM25 8k"}))
    records = [
        {
            "question_id": f"q{i}",
            "question_type": "static-environment",
            "category": "static",
            "is_abstention_problem": False,
            "memory_query_duration_seconds": 0.05,
            "reader_free": {"answer_phrases": i == 0},
        }
        for i in range(2)
    ]
    (going / "per_question.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    report = build_report([runs])
    point = next(p for p in report.points if p.name == "BM25 8k (running)")
    assert point.accuracy == 50.0 and point.latency == aggregate(records)["memory_query"]["avg_seconds"]
