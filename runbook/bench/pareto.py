"""The accuracy-vs-latency chart: every run a point with its 95% interval and its n, the frontier drawn, and (only
for reader accuracy) LongMemEval-V2's published points beside them; the same points as CSV.

A reader-free figure (answer phrases, evidence) is never drawn against the published reader accuracy: the two
measure different things on different questions. Labels and the legend are kept off the points: the legend sits
outside the axes, and each label goes to the first spot around its point that covers no marker, interval bar or
other label (with a leader line when it had to move away).

matplotlib is an optional extra (`pip install 'runbook[bench]'`): it is imported here only, when a chart is drawn.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .lafs import PUBLISHED, PUBLISHED_QUESTIONS, OperatingPoint, frontier
from .metrics import wilson

MIN_SHOWN_LATENCY = 1e-3
"""Latencies below a millisecond (the empty baseline's) are drawn at 1 ms: a log axis has no zero."""
LABEL_OFFSETS = [
    (dx, dy)
    for radius in (8, 18, 30, 44, 60, 80, 105, 135, 170)
    for dx, dy in ((1, 0.4), (1, -1.2), (-1, 0.4), (-1, -1.2), (0.3, 1.4), (0.3, -2.2), (-0.3, 1.4), (-0.3, -2.2))
    for dx, dy in [(dx * radius, dy * radius)]
]
"""Where a label may go around its point (points), nearest first, tried until it covers nothing drawn (and its
leader line crosses no other label); when none is clear, the one that covers least."""
MARKER_PAD = 5
"""Pixels around a marker that a label must keep clear of."""


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


def write_csv(
    path: Path,
    points: Sequence[OperatingPoint],
    intervals: Sequence[Any],
    rows: Sequence[dict],
    tier: str = "small",
    *,
    published: bool = False,
) -> Path:
    """One row per run (the report's columns, the score's n and 95% interval); `frontier` marks the frontier.
    With `published` (a reader-scored report) also one row per LongMemEval-V2 published point."""
    on_frontier = {p.name for p in frontier(points)}
    head = ["source", "label", "score", "score_n", "score_low95", "score_high95", "avg_latency_s", "frontier"]
    columns = list(dict.fromkeys([*head, *(k for row in rows for k in row)]))
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        for point, interval, row in zip(points, intervals, rows):
            writer.writerow(
                {
                    **row,
                    "source": "run",
                    "label": point.name,
                    "score": round(point.accuracy, 2),
                    "score_n": interval.n,
                    "score_low95": round(interval.low, 2),
                    "score_high95": round(interval.high, 2),
                    "avg_latency_s": point.latency,
                    "frontier": point.name in on_frontier,
                }
            )
        if published:
            for point in PUBLISHED[tier]:
                low, high = wilson(point.accuracy / 100, PUBLISHED_QUESTIONS)
                writer.writerow(
                    {
                        "source": f"LongMemEval-V2 {tier} (published reader accuracy)",
                        "label": point.name,
                        "score": point.accuracy,
                        "score_n": PUBLISHED_QUESTIONS,
                        "score_low95": round(100 * low, 2),
                        "score_high95": round(100 * high, 2),
                        "avg_latency_s": point.latency,
                        "frontier": point.name in {p.name for p in frontier(PUBLISHED[tier])},
                    }
                )
    return path


def draw_chart(
    path: Path,
    points: Sequence[OperatingPoint],
    intervals: Sequence[Any],
    *,
    score_name: str,
    title: str,
    tier: str = "small",
    note: str = "",
    published: bool = False,
) -> Path:
    """The PNG: runs as dots with 95% bars and n, their frontier as a step line; with `published` (reader accuracy
    only) LongMemEval-V2's points as grey diamonds with theirs."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(12.5, 6.8), dpi=130)
    shown = [
        OperatingPoint(
            p.name if p.latency >= MIN_SHOWN_LATENCY else f"{p.name} (<1 ms)",
            p.accuracy,
            max(p.latency, MIN_SHOWN_LATENCY),
        )
        for p in points
    ]
    reference = PUBLISHED[tier] if published else []
    every = shown + reference
    right = max([p.latency for p in every] + [200.0]) * 2.5
    left = min(p.latency for p in every) / 2.5

    _draw_runs(ax, shown, intervals, right)
    if reference:
        _draw_published(ax, reference, tier, right)
    ax.errorbar([], [], fmt="o", color="tab:blue", markeredgecolor="black", label="run on the frontier (95% interval)")
    ax.errorbar([], [], fmt="o", color="tab:orange", markeredgecolor="black", label="run off the frontier")

    _dress(fig, ax, (left, right), score_name=score_name, title=title, note=note)
    labelled = [(p, i.n, "black", 9) for p, i in zip(shown, intervals)]
    labelled += [(p, PUBLISHED_QUESTIONS, "dimgrey", 8) for p in reference]
    _place_labels(fig, ax, labelled)
    fig.savefig(path)
    plt.close(fig)
    return path


def _draw_runs(ax, shown: list[OperatingPoint], intervals: Sequence[Any], right: float) -> None:
    """The runs' frontier as a step line to `right`, and each run as a dot with its 95% bar."""
    front = frontier(shown)
    xs = [p.latency for p in front] + [right]
    ys = [p.accuracy for p in front] + [front[-1].accuracy if front else 0]
    ax.step(xs, ys, where="post", color="tab:blue", linewidth=2, alpha=0.5, label="frontier of these runs", zorder=2)
    on_front = {p.name for p in front}
    for p, interval in zip(shown, intervals):
        colour = "tab:blue" if p.name in on_front else "tab:orange"
        ax.errorbar(
            p.latency,
            p.accuracy,
            yerr=[[p.accuracy - interval.low], [interval.high - p.accuracy]],
            fmt="o",
            markersize=7,
            color=colour,
            markeredgecolor="black",
            markeredgewidth=0.6,
            ecolor=colour,
            elinewidth=1.2,
            capsize=3,
            zorder=4,
        )


def _draw_published(ax, reference: list[OperatingPoint], tier: str, right: float) -> None:
    """LongMemEval-V2's published points as grey diamonds with their 95% bars, and their frontier dashed."""
    ref_front = frontier(reference)
    ax.step(
        [p.latency for p in ref_front] + [right],
        [p.accuracy for p in ref_front] + [ref_front[-1].accuracy],
        where="post",
        color="grey",
        linewidth=1,
        linestyle="--",
        alpha=0.7,
        label=f"published LongMemEval-V2 {tier} frontier",
        zorder=1,
    )
    for p in reference:
        low, high = wilson(p.accuracy / 100, PUBLISHED_QUESTIONS)
        ax.errorbar(
            p.latency,
            p.accuracy,
            yerr=[[p.accuracy - 100 * low], [100 * high - p.accuracy]],
            fmt="D",
            markersize=6,
            color="lightgrey",
            markeredgecolor="dimgrey",
            ecolor="darkgrey",
            capsize=3,
            zorder=3,
        )
    ax.errorbar([], [], fmt="D", color="lightgrey", markeredgecolor="dimgrey", label=_published_label(tier))


def _dress(fig, ax, xlim: tuple[float, float], *, score_name: str, title: str, note: str) -> None:
    """Axes, labels, grid, the LAFS latency band, the legend and the note."""
    left, right = xlim
    ax.set_xscale("log")
    ax.set_xlim(left, right)
    ax.set_ylim(-4, 104)
    ax.set_xlabel("average query latency (seconds, log scale; lower is better)", fontsize=11)
    ax.set_ylabel(f"{score_name} (%; higher is better)", fontsize=11)
    ax.set_title(title, fontsize=11)
    ax.grid(True, which="major", alpha=0.3)
    ax.axvspan(1, 200, color="tab:green", alpha=0.04, label="LAFS latency range (1-200 s)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8.5, framealpha=0.9, borderaxespad=0)
    if note:
        fig.text(0.01, 0.01, note, fontsize=8, color="dimgrey", ha="left", va="bottom", wrap=True)
    fig.tight_layout(rect=(0, 0.04 if note else 0, 1, 1))


def _published_label(tier: str) -> str:
    return f"LongMemEval-V2 {tier}, published (reader accuracy, n={PUBLISHED_QUESTIONS})"


def _place_labels(fig, ax, labelled: list[tuple[OperatingPoint, int, str, int]]) -> None:
    """Each point's label ('name (n=22)') at the first offset where it covers no marker, interval bar, label or
    the legend; a leader line joins a label that had to move away from its point."""
    from matplotlib.transforms import Bbox

    renderer = fig.canvas.get_renderer()
    taken = [ax.get_legend().get_window_extent(renderer)] if ax.get_legend() else []
    for line in ax.lines:  # the markers, and the interval bars' caps (lines without a marker are not points)
        if line.get_marker() in (None, "None", "", " "):
            continue
        for x, y in ax.transData.transform(line.get_xydata()) if len(line.get_xydata()) else []:
            taken.append(
                Bbox.from_extents(x - 2 * MARKER_PAD, y - 2 * MARKER_PAD, x + 2 * MARKER_PAD, y + 2 * MARKER_PAD)
            )
    for collection in ax.collections:  # the interval bars' vertical segments
        for segment in getattr(collection, "get_segments", lambda: [])():
            pixels = ax.transData.transform(segment)
            (x0, y0), (x1, y1) = pixels.min(axis=0), pixels.max(axis=0)
            taken.append(Bbox.from_extents(x0 - MARKER_PAD, y0 - MARKER_PAD, x1 + MARKER_PAD, y1 + MARKER_PAD))
    inside = ax.get_window_extent(renderer)
    labels: list = []
    """The boxes of the labels placed so far: no leader line may cross one."""
    leaders: list[tuple[tuple[float, float], tuple[float, float]]] = []
    """The leader lines drawn so far (pixels, from point to label): no label may lie across one."""
    for point, n, colour, size in labelled:
        text = f"{point.name} (n={n})"
        anchor = tuple(ax.transData.transform((point.latency, point.accuracy)))
        best = None
        for dx, dy in LABEL_OFFSETS:
            note = _annotate(ax, text, point, (dx, dy), colour, size)
            box = note.get_window_extent(renderer)
            note.remove()
            line = (anchor, _leader_end(box, dx, dy)) if abs(dx) > 20 or abs(dy) > 20 else None
            crossed = any(_crosses(leader, box) for leader in leaders)
            crossed |= line is not None and any(_crosses(line, other) for other in labels)
            cost = sum(_overlap(box, other) for other in taken) + (0 if _within(box, inside) else 1e9) + 1e6 * crossed
            if best is None or cost < best[0]:
                best = (cost, box, dx, dy, line)
            if cost == 0:
                break
        assert best is not None  # LABEL_OFFSETS is not empty
        _cost, box, dx, dy, line = best
        _annotate(ax, text, point, (dx, dy), colour, size, leader=line is not None)
        taken.append(box)
        labels.append(box)
        if line is not None:
            leaders.append(line)


def _overlap(box, other) -> float:
    """The area two boxes share (pixels)."""
    width = min(box.x1, other.x1) - max(box.x0, other.x0)
    height = min(box.y1, other.y1) - max(box.y0, other.y0)
    return width * height if width > 0 and height > 0 else 0.0


def _leader_end(box, dx: float, dy: float) -> tuple[float, float]:
    """Where a leader line meets its label (pixels): the corner the label is anchored at, facing its point (the
    arrow's `relpos` in _annotate; matplotlib's default, the label's centre, ran the line across other labels)."""
    return (box.x0 if dx >= 0 else box.x1, box.y0 if dy >= 0 else box.y1)


def _crosses(line, box) -> bool:
    """Whether a leader line (two pixel points) passes through `box` (checked at points along it, its ends
    excluded: a line may touch the label it leads to)."""
    (x0, y0), (x1, y1) = line
    return any(box.contains(x0 + (x1 - x0) * t / 24, y0 + (y1 - y0) * t / 24) for t in range(1, 24))


def _annotate(ax, text: str, point: OperatingPoint, offset: tuple[float, float], colour: str, size: int, leader=False):
    dx, dy = offset
    return ax.annotate(
        text,
        (point.latency, point.accuracy),
        xytext=(dx, dy),
        textcoords="offset points",
        fontsize=size,
        color=colour,
        ha="left" if dx >= 0 else "right",
        va="bottom" if dy >= 0 else "top",
        zorder=5,
        arrowprops={
            "arrowstyle": "-",
            "color": "grey",
            "lw": 0.6,
            "shrinkA": 0,
            "shrinkB": 4,
            "relpos": (0 if dx >= 0 else 1, 0 if dy >= 0 else 1),  # from the corner facing the point: _leader_end
        }
        if leader
        else None,
    )


def _within(box, inside) -> bool:
    return box.x0 >= inside.x0 and box.x1 <= inside.x1 and box.y0 >= inside.y0 and box.y1 <= inside.y1
