"""LAFS (latency-aware frontier score), LongMemEval-V2's leaderboard score, and the published operating points.

For a latency budget T the best reachable accuracy is that of the most accurate point whose average query latency
is at most T (0 when none is). LAFS is its average over T log-uniform on [1 s, 200 s]: with the frontier's
latencies l_i (inside the range) and r_i the next breakpoint,

    LAFS = sum_i best_accuracy(<= l_i) * ln(r_i / l_i) / ln(200 / 1)

A point faster than 1 s counts from T = 1 s; a point slower than 200 s never counts.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

T_MIN = 1.0
T_MAX = 200.0


@dataclass(frozen=True)
class OperatingPoint:
    """One method's accuracy (percent) at its average query latency (seconds)."""

    name: str
    accuracy: float
    latency: float


PUBLISHED = {
    "small": [
        OperatingPoint("RAG (slice + notes)", 51.0, 0.2),
        OperatingPoint("AgentRunbook-R", 58.6, 26.9),
        OperatingPoint("AgentRunbook-C", 74.9, 108.3),
        OperatingPoint("Codex", 69.9, 177.2),
    ],
    "medium": [
        OperatingPoint("RAG (slice + notes)", 45.9, 0.3),
        OperatingPoint("AgentRunbook-R", 57.0, 25.8),
        OperatingPoint("AgentRunbook-C", 70.1, 139.9),
        OperatingPoint("Codex", 68.7, 185.8),
    ],
}
"""LongMemEval-V2's reference frontier, as its leaderboard code states it (accuracy %, average latency s)."""
PUBLISHED_QUESTIONS = 451
"""The questions those accuracies are over (LongMemEval-V2's README): the n of each published point."""


def frontier(points: Iterable[OperatingPoint]) -> list[OperatingPoint]:
    """The points no faster point beats or equals in accuracy, fastest first."""
    best = -math.inf
    kept = []
    for point in sorted(points, key=lambda p: (p.latency, -p.accuracy)):
        if point.accuracy > best:
            kept.append(point)
            best = point.accuracy
    return kept


def best_within(points: Iterable[OperatingPoint], seconds: float) -> float:
    """The best accuracy among points with latency <= seconds (0 when none)."""
    return max((p.accuracy for p in points if p.latency <= seconds), default=0.0)


def lafs(points: Iterable[OperatingPoint], t_min: float = T_MIN, t_max: float = T_MAX) -> float:
    """LAFS of a set of operating points (accuracy in the points' unit, usually percent)."""
    if not 0 < t_min < t_max:
        raise ValueError("LAFS needs 0 < t_min < t_max")
    front = frontier(points)
    cuts = sorted({t_min, t_max, *(p.latency for p in front if t_min < p.latency < t_max)})
    area = sum(best_within(front, left) * math.log(right / left) for left, right in zip(cuts, cuts[1:]))
    return area / math.log(t_max / t_min)


def lafs_gain(points: Iterable[OperatingPoint], tier: str = "small") -> float:
    """How much `points` add to the published frontier's LAFS (the leaderboard's score)."""
    reference = PUBLISHED[tier]
    return lafs([*reference, *points]) - lafs(reference)
