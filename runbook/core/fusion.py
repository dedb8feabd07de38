"""Combining rankings, ordering hits in time, and collapsing duplicates."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import TypeVar

from .hits import Hit

RRF_K = 60

K = TypeVar("K", bound=Hashable)


def rrf(
    rankings: Iterable[Sequence[K]], weights: Sequence[float] | None = None, k: int = RRF_K
) -> list[tuple[K, float]]:
    """Reciprocal rank fusion: sum of weight/(k + rank) over the rankings that hold a key; best first."""
    scores: dict[K, float] = defaultdict(float)
    for n, ranking in enumerate(rankings):
        weight = weights[n] if weights else 1.0
        for rank, key in enumerate(ranking):
            scores[key] += weight / (k + rank + 1)
    return sorted(scores.items(), key=lambda kv: -kv[1])


def latest_first(
    hits: list[Hit], key_of: Callable[[Hit], Hashable], *, reorder: bool = True, keep: int = 3
) -> list[Hit]:
    """Hits that show the same page (same `key_of(hit)`) at different times: the newest is labelled 'latest of N
    views' and the others 'older view'. With `reorder` (questions about the current value) a group is put
    newest first where its best hit ranked; otherwise relevance order stays and only the first `keep` hits of a
    group keep their place, the rest go to the end (room for other pages)."""
    groups: dict[Hashable, list[Hit]] = {}
    order: list[Hashable] = []
    for hit in hits:
        key = key_of(hit)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(hit)
    for group in groups.values():
        by_time = sorted(group, key=lambda h: h.timestamp or "", reverse=True)
        if len(by_time) > 1:
            newest = by_time[0]
            # an event's time is its last state's; views at the newest time (a run's last transition and its final
            # action) are all the latest, none older than another
            newest_state = newest.state_index if newest.end_state_index is None else newest.end_state_index
            for hit in by_time:
                if hit is newest or (hit.timestamp and hit.timestamp == newest.timestamp):
                    hit.label = f"latest of {len(group)} views of this page"
                else:
                    hit.label = (
                        f"older view ({(hit.timestamp or '?')[:10]}); newer: {newest.trajectory_id} state "
                        f"{newest_state} ({(newest.timestamp or '?')[:10]})"
                    )
        if reorder:
            group[:] = by_time
    if reorder:
        return [hit for key in order for hit in groups[key]]
    seen: dict[Hashable, int] = {}
    head: list[Hit] = []
    tail: list[Hit] = []
    for hit in hits:
        key = key_of(hit)
        seen[key] = seen.get(key, 0) + 1
        (head if seen[key] <= keep else tail).append(hit)
    return head + tail


def collapse_duplicates(texts: list[str]) -> list[int | None]:
    """For each text, the index of an earlier identical one (None for the first of its kind)."""
    first: dict[str, int] = {}
    out: list[int | None] = []
    for n, text in enumerate(texts):
        key = " ".join(text.split())
        if key and key in first:
            out.append(first[key])
        else:
            first.setdefault(key, n)
            out.append(None)
    return out
