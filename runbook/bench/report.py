"""`runbook bench report RUN...`: runs side by side (a table), the Pareto chart and CSV, and LAFS.

The score of a run is the reader's accuracy (`overall_full_set`, LongMemEval-V2's headline) when every run given
was reader-scored, otherwise the reader-free share of answerable questions whose answer phrases reached the
context (`--score` picks explicitly). Every score comes with the number of questions it is over and a 95% (Wilson)
interval. LAFS integrates the score over latency budgets; a gain over LongMemEval-V2's published frontier (reader
accuracy) is computed, and its points drawn, only when the score is reader accuracy too: a reader-free figure is
never set against a reader's.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .lafs import PUBLISHED_QUESTIONS, OperatingPoint, frontier, lafs, lafs_gain
from .metrics import aggregate, wilson
from .run_folder import CONFIG, METRICS, read_records

SCORES = {
    "accuracy": ("reader accuracy", lambda m: m.get("overall", {}).get("overall_full_set")),
    "phrases": ("answer phrases in context", lambda m: m.get("reader_free", {}).get("answer_phrases")),
    "evidence": ("evidence states cited", lambda m: m.get("reader_free", {}).get("evidence")),
}
SCORE_COUNTS = {
    "accuracy": lambda m: m.get("overall", {}).get("count_graded"),
    "phrases": lambda m: m.get("reader_free", {}).get("answer_phrases_count"),
    "evidence": lambda m: m.get("reader_free", {}).get("evidence_count"),
}
"""How many questions each score is over (answer phrases: the answerable, text-grounded ones only)."""


@dataclass(frozen=True)
class Interval:
    """A score's question count and its 95% interval, in percent."""

    n: int
    low: float
    high: float


@dataclass
class RunSummary:
    """One run's figures, read from its aggregated_metrics.json."""

    label: str
    folder: Path
    metrics: dict[str, Any]

    def value(self, score: str) -> float | None:
        return SCORES[score][1](self.metrics)

    def interval(self, score: str) -> Interval:
        """How many questions `score` is over (the run's count when the metrics predate the per-score counts)."""
        n = SCORE_COUNTS[score](self.metrics)
        n = int(self.metrics.get("count") or 0) if n is None else int(n)
        low, high = wilson(self.value(score) or 0.0, n)
        return Interval(n, 100 * low, 100 * high)

    def row(self) -> dict[str, Any]:
        m = self.metrics
        rf, diag, lat = m.get("reader_free", {}), m.get("diagnostics", {}), m.get("memory_query", {})
        return {
            "run": self.metrics.get("name", self.folder.name),
            "questions": m.get("count"),
            "accuracy": m.get("overall", {}).get("overall_full_set"),
            "answer_phrases": rf.get("answer_phrases"),
            "evidence": rf.get("evidence"),
            "evidence_share": rf.get("evidence_share"),
            "stale_led": rf.get("stale_led"),
            "premise_flagged": rf.get("premise_flagged"),
            "excerpt_recall": rf.get("excerpt_recall"),
            "answer_depth": rf.get("answer_depth_median"),
            "items_avg": m.get("context_spend", {}).get("items_avg"),
            "furniture_tokens_avg": m.get("context_spend", {}).get("furniture_tokens_avg"),
            "repeat_tokens_avg": m.get("context_spend", {}).get("repeat_tokens_avg"),
            "p50_s": lat.get("p50_seconds"),
            "p95_s": lat.get("p95_seconds"),
            "avg_tokens": m.get("memory_context", {}).get("avg_final_tokens"),
            "read_failures": diag.get("read_failures"),
            "utilization_failures": diag.get("utilization_failures"),
            "staleness_failures": diag.get("staleness_failures"),
            "write_failures": diag.get("write_failures", 0) + diag.get("store_write_failures", 0),
            "tool_calls_avg": m.get("memory_cost", {}).get("tool_calls_avg"),
            "errors": m.get("errors"),
        }


@dataclass
class Report:
    runs: list[RunSummary]
    score: str
    points: list[OperatingPoint] = field(default_factory=list)
    intervals: list[Interval] = field(default_factory=list)
    left_out: list[RunSummary] = field(default_factory=list)
    """Runs that have no such score (a reader's accuracy of runs without a reader): not tabled, drawn or counted."""

    def left_out_line(self) -> str | None:
        """One line saying which runs were left off and why, or None."""
        if not self.left_out:
            return None
        why = MISSING_SCORE[self.score]
        names = ", ".join(r.label for r in self.left_out)
        return f"left off ({len(self.left_out)} of {len(self.left_out) + len(self.runs)} runs have no {why}): {names}"

    @property
    def score_name(self) -> str:
        return SCORES[self.score][0]

    @property
    def reader_scored(self) -> bool:
        """True when the score is a reader's accuracy: the only score LongMemEval-V2's published points share."""
        return self.score == "accuracy"

    @property
    def lafs(self) -> float:
        return lafs(self.points)

    def lafs_gain(self, tier: str = "small") -> float | None:
        """The gain over the published frontier, or None for a reader-free score (not comparable)."""
        return lafs_gain(self.points, tier) if self.reader_scored else None

    def frontier_names(self) -> set[str]:
        return {p.name for p in frontier(self.points)}


def find_runs(paths: Sequence[str | Path]) -> list[RunSummary]:
    """Runs named directly, or found (sorted) under the folders given. A run still going (no
    aggregated_metrics.json yet) is aggregated from the records it has, and its label says so."""
    runs = []
    for path in map(Path, paths):
        found = [path / CONFIG] if (path / CONFIG).exists() else sorted(path.rglob(CONFIG))
        if not found:
            raise ConfigError(f"{path}: no run here or below ({CONFIG}); run `runbook bench run CONFIG` first")
        for file in found:
            summary = _summary(file.parent)
            if summary is not None:
                runs.append(summary)
    return runs


def _summary(folder: Path) -> RunSummary | None:
    if (folder / METRICS).exists():
        metrics = json.loads((folder / METRICS).read_text())
        label = metrics.get("label") or folder.name
    else:
        records = read_records(folder)
        if not records:
            return None
        config = json.loads((folder / CONFIG).read_text())
        metrics = {
            **aggregate(list({r["question_id"]: r for r in records}.values())),
            "name": config.get("name"),
            "count": len({r["question_id"] for r in records}),
        }
        label = f"{config.get('label') or folder.name} (running)"
    return RunSummary(label, folder, metrics) if metrics.get("count") else None


MISSING_SCORE = {
    "accuracy": "reader accuracy: they were run without a reader (no [reader] in the config, or --no-reader)",
    "phrases": "answer-phrase score: their metrics were written before it was",
    "evidence": "evidence score: their metrics were written before it was",
}
"""Why a run has no value for a score."""


def build_report(paths: Sequence[str | Path], score: str = "auto") -> Report:
    """The runs under `paths` scored by `score`; a run without that score is left out, never drawn as 0 (runs
    without a reader were drawn at 0% with n=0 beside the published reader points, and a gain of +0.00 printed)."""
    runs = find_runs(paths)
    if not runs:
        raise ConfigError("the runs given hold no answered questions yet")
    if score == "auto":
        score = "accuracy" if all(r.value("accuracy") is not None for r in runs) else "phrases"
    if score not in SCORES:
        raise ConfigError(f"unknown score {score!r}: choose auto, {', '.join(SCORES)}")
    scored = [r for r in runs if r.value(score) is not None]
    if not scored:
        raise ConfigError(
            f"no run given has {MISSING_SCORE[score]}; choose another score (--score phrases or evidence)"
        )
    points = [
        OperatingPoint(
            r.label, 100.0 * (r.value(score) or 0.0), max(r.metrics["memory_query"]["avg_seconds"] or 0.0, 1e-6)
        )
        for r in scored
    ]
    left_out = [r for r in runs if r.value(score) is None]
    return Report(scored, score, points, [r.interval(score) for r in scored], left_out)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def _count(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def _seconds(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value * 1000:.1f} ms" if value < 1 else f"{value:.2f} s"


def table(report: Report):
    """The terminal table (a rich Table): one row per run, best score first.

    Each column says which way is better: ↑ higher, ↓ lower, – neither (a count or a mark). Failures are counted
    in questions: READ (evidence never reached the context), UTIL (it did, the reader was still wrong), STALE (an
    older value came first), WRITE (an evidence state missing from the store). `excerpt`: phrases found where a
    gold state is cited; `depth`: the median tokens read before every answer phrase has appeared; `items` and
    `furn/rep tok`: items, and tokens on the site's furniture and on repeated views, per context.
    """
    from rich.table import Table

    t = Table(
        title=f"score = {report.score_name} (%) over n questions, with its 95% interval; ↑ higher is better, "
        "↓ lower is better, – neither; failures: READ/UTIL/STALE/WRITE questions",
        title_justify="left",
    )
    counted = {"acc ↑": "accuracy", "phrases ↑": "phrases", "evid ↑": "evidence"}
    counted |= {"stale ↓": "stale_led", "premise ↑": "premise_flagged", "excerpt ↑": "excerpt_recall"}
    for name in _COLUMNS:
        header = f"{name}\n{_counts(report.runs, counted[name])}" if name in counted else name
        t.add_column(header, justify="left" if name == "run" else "right", no_wrap=True)
    on_front = report.frontier_names()
    ranked = sorted(zip(report.runs, report.points, report.intervals), key=lambda rpi: -rpi[1].accuracy)
    for run, point, interval in ranked:
        t.add_row(*_table_row(run, point, interval, point.name in on_front))
    return t


_COLUMNS = (
    "run",
    "n –",
    "score ↑",
    "95% CI",
    "acc ↑",
    "phrases ↑",
    "evid ↑",
    "stale ↓",
    "premise ↑",
    "excerpt ↑",
    "depth ↓",
    "items –",
    "furn/rep tok ↓",
    "avg lat ↓",
    "p50 ↓",
    "p95 ↓",
    "tokens ↓",
    "R/U/S/W ↓",
    "front –",
)
"""The terminal table's columns, each marked with which way is better."""


def _table_row(run: RunSummary, point: OperatingPoint, interval: Any, on_front: bool) -> list[str]:
    """One run's cells, in _COLUMNS' order."""
    row = run.row()
    failures = "/".join(
        "-" if row[k] is None else str(row[k])
        for k in ("read_failures", "utilization_failures", "staleness_failures", "write_failures")
    )
    return [
        run.label,
        str(interval.n),
        f"{point.accuracy:.1f}",
        f"{interval.low:.0f}-{interval.high:.0f}",
        _pct(row["accuracy"]),
        _pct(row["answer_phrases"]),
        _pct(row["evidence"]),
        _pct(row["stale_led"]),
        _pct(row["premise_flagged"]),
        _pct(row["excerpt_recall"]),
        _count(row["answer_depth"]),
        _count(row["items_avg"]),
        f"{_count(row['furniture_tokens_avg'])}/{_count(row['repeat_tokens_avg'])}",
        _seconds(run.metrics["memory_query"]["avg_seconds"]),
        _seconds(row["p50_s"]),
        _seconds(row["p95_s"]),
        "-" if row["avg_tokens"] is None else f"{row['avg_tokens']:.0f}",
        failures,
        "*" if on_front else "",
    ]


def kinds_table(report: Report):
    """Excerpt recall and answer phrases per probe kind (the page unit a mechanical probe question asks about),
    one row per run, or None when no run has probe questions."""
    from rich.table import Table

    kinds = sorted({k for r in report.runs for k in r.metrics.get("reader_free", {}).get("by_probe_kind", {})})
    if not kinds:
        return None
    t = Table(
        title="probe questions per kind: excerpt recall % (n cited) / answer phrases % / depth p50, ↑ ↑ ↓",
        title_justify="left",
    )
    t.add_column("run", no_wrap=True)
    for kind in kinds:
        t.add_column(kind, justify="right", no_wrap=True)
    for run in report.runs:
        by = run.metrics.get("reader_free", {}).get("by_probe_kind", {})
        cells = []
        for kind in kinds:
            b = by.get(kind) or {}
            cells.append(
                f"{_pct(b.get('excerpt_recall'))} ({b.get('excerpt_recall_count', 0)}) / "
                f"{_pct(b.get('answer_phrases'))} / {_count(b.get('answer_depth_median'))}"
            )
        t.add_row(run.label, *cells)
    return t


def _counts(runs: list[RunSummary], figure: str) -> str:
    """'n=22' (or 'n=18-22'): how many questions a table column's figure is over, across the runs."""
    if figure in SCORE_COUNTS:
        values = {run.interval(figure).n for run in runs}
    else:
        values = {run.metrics.get("reader_free", {}).get(f"{figure}_count") or 0 for run in runs}
    low, high = min(values), max(values)
    return f"n={low}" if low == high else f"n={low}-{high}"


def write_outputs(report: Report, out_dir: Path, *, chart: bool = True, tier: str = "small") -> dict[str, Path]:
    """pareto.csv (always) and pareto.png (when `chart`) in `out_dir`."""
    from .pareto import draw_chart, write_csv

    out_dir.mkdir(parents=True, exist_ok=True)
    rows = [r.row() for r in report.runs]
    files = {
        "csv": write_csv(
            out_dir / "pareto.csv", report.points, report.intervals, rows, tier, published=report.reader_scored
        )
    }
    if chart:
        n = sorted({i.n for i in report.intervals})
        over = f"n = {n[0]} questions" if len(n) == 1 else f"n = {n[0]}-{n[-1]} questions"
        title = (
            f"{report.score_name} vs average query latency: {len(report.runs)} runs, {over} each, "
            f"95% intervals; LAFS {report.lafs:.1f}"
        )
        if report.reader_scored:
            note = (
                f"Runs: reader accuracy on their own question sets. Grey: LongMemEval-V2 {tier}, published reader "
                f"accuracy on its {PUBLISHED_QUESTIONS} questions (another haystack, reader and judge)."
            )
        else:
            note = (
                f"Reader-free: {SCORE_HELP[report.score]} LongMemEval-V2's published points are reader accuracy, "
                "not comparable, so they are not drawn."
            )
        if report.left_out:
            note += f" {len(report.left_out)} runs without this score are left off."
        files["png"] = draw_chart(
            out_dir / "pareto.png",
            report.points,
            report.intervals,
            score_name=report.score_name,
            title=title,
            tier=tier,
            note=note,
            published=report.reader_scored,
        )
    return files


SCORE_HELP = {
    "phrases": "the share of answerable questions whose every gold answer phrase is in the context.",
    "evidence": "the share of questions whose every gold evidence state is cited.",
}
