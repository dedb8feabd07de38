"""The accuracy-vs-latency chart: every run a labelled point, the frontier drawn, the published LongMemEval-V2
points as reference markers; and the same points as CSV.

matplotlib is an optional extra (`pip install 'runbook[bench]'`): it is imported here only, when a chart is drawn.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path

from ..errors import ConfigError
from .lafs import PUBLISHED, OperatingPoint, frontier

MIN_SHOWN_LATENCY = 1e-3
"""Latencies below a millisecond (the empty baseline's) are drawn at 1 ms: a log axis has no zero."""
LABEL_OFFSETS = [(7, 5), (7, -13), (-7, 5), (-7, -13), (7, 16), (-7, 16), (7, -24), (-7, -24), (0, 26), (0, -34)]
"""Where a label may go around its point (points), tried in order until it overlaps no earlier label."""


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise ConfigError(
            "the Pareto chart needs matplotlib: pip install 'runbook[bench]' (the CSV and the table need nothing more)"
        ) from None
    matplotlib.use("Agg")  # files only: never open a window, work on a headless machine
    import matplotlib.pyplot as plt

    return plt


def write_csv(path: Path, points: Sequence[OperatingPoint], rows: Sequence[dict], tier: str = "small") -> Path:
    """One row per run (with the report's columns) and one per published point; `frontier` marks the frontier."""
    on_frontier = {p.name for p in frontier(points)}
    columns = list(
        dict.fromkeys(["source", "label", "score", "avg_latency_s", "frontier", *(k for row in rows for k in row)])
    )
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        for point, row in zip(points, rows):
            writer.writerow(
                {
                    **row,
                    "source": "run",
                    "label": point.name,
                    "score": round(point.accuracy, 2),
                    "avg_latency_s": point.latency,
                    "frontier": point.name in on_frontier,
                }
            )
        for point in PUBLISHED[tier]:
            writer.writerow(
                {
                    "source": f"LongMemEval-V2 {tier} (published)",
                    "label": point.name,
                    "score": point.accuracy,
                    "avg_latency_s": point.latency,
                    "frontier": point.name in {p.name for p in frontier(PUBLISHED[tier])},
                }
            )
    return path


def draw_chart(
    path: Path, points: Sequence[OperatingPoint], *, score_name: str, title: str, tier: str = "small", note: str = ""
) -> Path:
    """The PNG: runs as labelled dots, their frontier as a step line, the published points as grey diamonds."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(11, 6.5), dpi=130)
    shown = [
        OperatingPoint(
            p.name if p.latency >= MIN_SHOWN_LATENCY else f"{p.name} (<1 ms)",
            p.accuracy,
            max(p.latency, MIN_SHOWN_LATENCY),
        )
        for p in points
    ]
    published = PUBLISHED[tier]
    right = max([p.latency for p in shown + published] + [200.0]) * 2.5
    left = min(p.latency for p in shown + published) / 2.5

    front = frontier(shown)
    xs = [p.latency for p in front] + [right]
    ys = [p.accuracy for p in front] + [front[-1].accuracy if front else 0]
    ax.step(xs, ys, where="post", color="tab:blue", linewidth=2, alpha=0.6, label="frontier of these runs", zorder=2)
    ref_front = frontier(published)
    ax.step(
        [p.latency for p in ref_front] + [right],
        [p.accuracy for p in ref_front] + [ref_front[-1].accuracy],
        where="post",
        color="grey",
        linewidth=1,
        linestyle="--",
        alpha=0.7,
        label=f"published LongMemEval-V2 {tier} frontier (reader accuracy)",
        zorder=1,
    )
    on_front = {p.name for p in front}
    for p in shown:
        ax.scatter(
            p.latency,
            p.accuracy,
            s=60,
            zorder=4,
            color="tab:blue" if p.name in on_front else "tab:orange",
            edgecolor="black",
            linewidth=0.6,
        )
    ax.scatter(
        [p.latency for p in published],
        [p.accuracy for p in published],
        marker="D",
        s=50,
        color="lightgrey",
        edgecolor="dimgrey",
        zorder=3,
        label=f"published LongMemEval-V2 {tier} points",
    )
    ax.scatter([], [], s=60, color="tab:orange", edgecolor="black", linewidth=0.6, label="run (off the frontier)")
    ax.scatter([], [], s=60, color="tab:blue", edgecolor="black", linewidth=0.6, label="run (on the frontier)")

    ax.set_xscale("log")
    ax.set_xlim(left, right)
    ax.set_ylim(-4, 104)
    ax.set_xlabel("average query latency (seconds, log scale)", fontsize=11)
    ax.set_ylabel(f"{score_name} (%)", fontsize=11)
    ax.set_title(title, fontsize=12)
    ax.grid(True, which="major", alpha=0.3)
    ax.axvspan(1, 200, color="tab:green", alpha=0.04, label="LAFS latency range (1-200 s)")
    ax.legend(loc="upper left", fontsize=8.5, framealpha=0.9)
    if note:
        fig.text(0.01, 0.01, note, fontsize=8, color="dimgrey", ha="left", va="bottom")
    fig.tight_layout(rect=(0, 0.03 if note else 0, 1, 1))
    _place_labels(
        fig,
        ax,
        [(p.name, p.latency, p.accuracy, "black", 9) for p in shown]
        + [(p.name, p.latency, p.accuracy, "dimgrey", 8) for p in published],
    )
    fig.savefig(path)
    plt.close(fig)
    return path


def _place_labels(fig, ax, labels: list[tuple[str, float, float, str, int]]) -> None:
    """Each label beside its point, at the first offset where it overlaps no label placed before it."""
    renderer = fig.canvas.get_renderer()
    taken = [ax.get_legend().get_window_extent(renderer)] if ax.get_legend() else []
    for text, x, y, color, size in labels:
        for dx, dy in LABEL_OFFSETS:
            note = ax.annotate(
                text,
                (x, y),
                xytext=(dx, dy),
                textcoords="offset points",
                fontsize=size,
                color=color,
                ha="left" if dx >= 0 else "right",
                va="bottom",
                zorder=5,
            )
            box = note.get_window_extent(renderer)
            if not any(box.overlaps(other) for other in taken):
                break
            note.remove()
        else:  # every spot is taken: keep the first and accept the overlap rather than lose the label
            note = ax.annotate(
                text,
                (x, y),
                xytext=LABEL_OFFSETS[0],
                textcoords="offset points",
                fontsize=size,
                color=color,
                va="bottom",
                zorder=5,
            )
            box = note.get_window_extent(renderer)
        taken.append(box)
