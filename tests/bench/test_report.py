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
        "overall": {"overall_full_set": accuracy, "count_graded": count if accuracy is not None else 0},
        "memory_query": {"avg_seconds": latency, "p50_seconds": latency, "p95_seconds": 2 * latency},
        "reader_free": {
            "answer_phrases": phrases,
            "answer_phrases_count": count - 2,
            "evidence": phrases / 2,
            "evidence_count": count,
        },
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
    # a reader-free figure is never set against the published reader accuracy: no gain is computed
    assert report.lafs_gain() is None and not report.reader_scored
    assert [i.n for i in report.intervals] == [8, 8, 8]  # answer phrases: the answerable questions only
    r = report.intervals[2]
    assert (round(r.low), round(r.high)) == (45, 95)  # Wilson 95% for 0.8 over 8 questions
    rendered = Console(width=250, record=True)
    rendered.print(table(report))
    text = rendered.export_text()
    rows = [line for line in text.splitlines() if line.startswith("│")]
    assert "R 8k" in rows[0] and "80.0" in rows[0] and "45-95" in rows[0] and "3/0/1/0" in rows[0]  # best first
    assert "none 8k" in rows[-1]
    header = "\n".join(line for line in text.splitlines() if line.startswith("┃"))
    for column in ("score ↑", "phrases ↑", "stale ↓", "avg lat ↓", "R/U/S/W ↓", "n –", "n=8", "n=10"):
        assert column in header  # a direction for every column, and what each figure is over


def test_reader_accuracy_is_the_score_when_every_run_has_it(tmp_path):
    write_run(tmp_path / "a", "A", latency=30.0, phrases=0.5, accuracy=0.6)
    write_run(tmp_path / "b", "B", latency=120.0, phrases=0.9, accuracy=0.8)
    report = build_report([tmp_path / "a", tmp_path / "b"])
    assert report.score == "accuracy" and [p.accuracy for p in report.points] == [60.0, 80.0]
    assert report.reader_scored and report.lafs_gain() == pytest.approx(
        lafs([*PUBLISHED["small"], *report.points]) - lafs(PUBLISHED["small"])
    )
    assert [i.n for i in report.intervals] == [10, 10]
    assert build_report([tmp_path], score="evidence").points[0].accuracy == 25.0


def test_chart_and_csv(runs, tmp_path):
    files = write_outputs(build_report([runs]), tmp_path / "out")
    assert files["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and files["png"].stat().st_size > 20_000
    rows = list(csv.DictReader(files["csv"].open()))
    ours = {r["label"]: r for r in rows if r["source"] == "run"}
    assert ours["R 8k"]["frontier"] == "True" and ours["C 8k"]["frontier"] == "False"
    assert float(ours["R 8k"]["avg_latency_s"]) == 0.2 and ours["R 8k"]["read_failures"] == "3"
    assert ours["R 8k"]["score_n"] == "8" and float(ours["R 8k"]["score_low95"]) < 80 < float(
        ours["R 8k"]["score_high95"]
    )
    assert not [r for r in rows if r["source"] != "run"]  # reader-free: no published reader accuracy beside it


def _drawn(monkeypatch, report, tmp_path):
    """What draw_chart put on the axes: the points' y values, the legend's box, the labels' boxes."""
    import matplotlib.pyplot as plt

    from runbook.bench import pareto

    seen = {}
    real_savefig = plt.Figure.savefig

    def keep(fig, path, *args, **kwargs):
        ax = fig.axes[0]
        renderer = fig.canvas.get_renderer()
        seen["ys"] = sorted({round(float(y), 1) for line in ax.lines for y in line.get_ydata()})
        seen["legend"] = ax.get_legend().get_window_extent(renderer)
        seen["axes"] = ax.get_window_extent(renderer)
        seen["labels"] = {t.get_text(): t.get_window_extent(renderer) for t in ax.texts}
        markers = [line for line in ax.lines if line.get_marker() not in (None, "None", "") and len(line.get_xydata())]
        seen["markers"] = [ax.transData.transform(xy) for line in markers for xy in line.get_xydata()]
        return real_savefig(fig, path, *args, **kwargs)

    monkeypatch.setattr(plt.Figure, "savefig", keep)
    pareto_file = write_outputs(report, tmp_path / "chart")["png"]
    assert pareto_file.exists() and pareto
    return seen


def test_a_reader_free_chart_shows_no_published_point_and_keeps_labels_off_the_points(runs, tmp_path, monkeypatch):
    """Item 9 of issue 24: the chart put reader-free answer phrases next to the published reader accuracy; labels
    and the legend sat on the points; no n or interval was shown."""
    seen = _drawn(monkeypatch, build_report([runs]), tmp_path)
    published = {p.accuracy for p in PUBLISHED["small"]}
    assert not published & set(seen["ys"])  # 51.0, 58.6, 74.9, 69.9 are not drawn
    assert set(seen["labels"]) == {"R 8k (n=8)", "C 8k (n=8)", "none 8k (<1 ms) (n=8)"}
    assert seen["legend"].x0 >= seen["axes"].x1  # the legend is outside the axes
    for box in seen["labels"].values():
        assert not any(box.contains(x, y) for x, y in seen["markers"])


def test_a_reader_scored_chart_shows_the_published_points_with_their_n(tmp_path, monkeypatch):
    write_run(tmp_path / "runs" / "a", "A", latency=30.0, phrases=0.5, accuracy=0.6)
    write_run(tmp_path / "runs" / "b", "B", latency=120.0, phrases=0.9, accuracy=0.8)
    seen = _drawn(monkeypatch, build_report([tmp_path / "runs"]), tmp_path)
    assert {p.accuracy for p in PUBLISHED["small"]} <= set(seen["ys"])
    assert "AgentRunbook-C (n=451)" in seen["labels"] and "A (n=10)" in seen["labels"]
    rows = list(csv.DictReader((tmp_path / "chart" / "pareto.csv").open()))
    assert len([r for r in rows if r["source"].startswith("LongMemEval-V2")]) == 4


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


def test_runs_without_the_score_asked_for_are_left_off_with_a_line_saying_why(tmp_path):
    """Issue 34 item 16: `--score accuracy` over runs without a reader drew them at 0% with n=0 beside the
    published reader points, and printed a gain of +0.00."""
    from click.testing import CliRunner

    from runbook.cli import main

    write_run(tmp_path / "runs" / "r-reader", "R 3k", latency=0.1, phrases=0.6, accuracy=0.25, count=20)
    write_run(tmp_path / "runs" / "bm25", "BM25 8k", latency=0.09, phrases=0.2)
    write_run(tmp_path / "runs" / "none", "no memory 8k", latency=0.00001, phrases=0.0)
    report = build_report([tmp_path / "runs"], score="accuracy")
    assert [r.label for r in report.runs] == ["R 3k"] and [p.accuracy for p in report.points] == [25.0]
    assert [r.label for r in report.left_out] == ["BM25 8k", "no memory 8k"]
    result = CliRunner().invoke(
        main, ["bench", "report", str(tmp_path / "runs"), "--score", "accuracy", "--out", str(tmp_path / "chart")]
    )
    assert result.exit_code == 0, result.output
    assert "left off (2 of 3 runs have no reader accuracy: they were run without a reader" in result.output
    assert "BM25 8k, no memory 8k" in result.output
    table_rows = [line for line in result.output.splitlines() if line.startswith("│")]
    assert len(table_rows) == 1 and "R 3k" in table_rows[0]
    rows = list(csv.DictReader((tmp_path / "chart" / "pareto.csv").open()))
    assert [r["label"] for r in rows if r["source"] == "run"] == ["R 3k"]
    with pytest.raises(ConfigError, match="no run given has reader accuracy"):
        build_report([tmp_path / "runs" / "bm25", tmp_path / "runs" / "none"], score="accuracy")


def test_crowded_labels_overlap_nothing_and_no_leader_line_crosses_a_label(tmp_path, monkeypatch):
    """Issue 34 item 16: 'no memory' was drawn over 'BM25' (two points at 1 ms), and a leader line ran from the
    label's centre across its neighbour. Sixteen runs, fourteen of them in one cluster."""
    import random

    from matplotlib.text import Text
    from matplotlib.transforms import Bbox

    rng = random.Random(4)
    for n in range(14):
        name = f"method {n} {rng.choice(['3k', '8k'])}"
        write_run(tmp_path / "runs" / f"d{n}", name, latency=0.1 * (1 + rng.random()), phrases=0.7 + 0.1 * rng.random())
    write_run(tmp_path / "runs" / "none", "no memory 8k", latency=0.0000005, phrases=0.0)
    write_run(tmp_path / "runs" / "bm25", "BM25 states 8k", latency=0.0009, phrases=0.02)
    seen = {}
    real_savefig = plt_figure().savefig

    def keep(fig, path, *args, **kwargs):
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        ax = fig.axes[0]
        # the text's own box (an annotation's get_window_extent covers its leader line too)
        seen["labels"] = [Text.get_window_extent(t, renderer) for t in ax.texts]
        seen["leaders"] = [t.arrow_patch.get_path().vertices for t in ax.texts if t.arrow_patch is not None]
        markers = [line for line in ax.lines if line.get_marker() not in (None, "None", "") and len(line.get_xydata())]
        seen["markers"] = [ax.transData.transform(xy) for line in markers for xy in line.get_xydata()]
        return real_savefig(fig, path, *args, **kwargs)

    monkeypatch.setattr(plt_figure(), "savefig", keep)
    write_outputs(build_report([tmp_path / "runs"]), tmp_path / "chart")
    labels = seen["labels"]
    assert len(labels) == 16 and seen["leaders"]

    def shared(a, b) -> float:
        both = Bbox.intersection(a, b)
        return 0.0 if both is None else both.width * both.height

    for i, box in enumerate(labels):
        assert not any(shared(box, other) > 1 for other in labels[i + 1 :]), "two labels overlap"
        assert not any(box.contains(x, y) for x, y in seen["markers"]), "a label covers a point"
    for path in seen["leaders"]:
        (x0, y0), (x1, y1) = path[0], path[-1]
        along = [(x0 + (x1 - x0) * t / 40, y0 + (y1 - y0) * t / 40) for t in range(4, 37)]
        crossed = [box for box in labels if sum(box.contains(x, y) for x, y in along) > 2]
        assert not crossed, "a leader line runs across a label"


def plt_figure():
    import matplotlib.pyplot as plt

    return plt.Figure
