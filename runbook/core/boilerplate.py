"""Which states show a given content line: lines on most pages of a site (menus, footers) are boilerplate, and the
states that show the line that answers a question corroborate each other (runbook.core.recall's sightings).

The counts are cached in segments of slice documents (core.segments), as the BM25 indexes are: per segment, each
distinct line hash and the number of states (of every generation) that show it, and, for pools that record each
state's number of lines, which documents show each hash. A site's number of states counts its live states only, so
it is worked out when the segments are read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .pools import PoolSnapshot
from .segments import Bounds, DocTable, Kind, Segment, load_segments

VERSION = 1
"""Bump when the line counts' segments change: cached segments of another version are built again."""
MIN_STATES = 8
SHARE = 0.3
"""A line on at least this share of a site's states (and on MIN_STATES of them) is the site's furniture."""


@dataclass
class LineSegment(Segment):
    """The line counts of one segment of slice documents."""

    hashes: np.ndarray
    """The distinct line hashes of its states, sorted."""
    counts: np.ndarray
    """How many of its states (dead generations included) show each."""
    by_hash: np.ndarray
    """Every (state, line) hash sorted, with its document in `by_hash_docs`; both empty when not `indexed`."""
    by_hash_docs: np.ndarray
    indexed: bool
    """Whether the pools record each state's number of lines (pools built before did not: `runbook reindex`)."""

    @property
    def size(self) -> int:
        return len(self.by_hash) + len(self.hashes) + self.end[0] - self.start[0]

    def arrays(self) -> dict[str, Any]:
        lines = {
            "hashes": self.hashes,
            "counts": self.counts,
            "by_hash": self.by_hash,
            "by_hash_docs": self.by_hash_docs,
        }
        return {**super().arrays(), **lines, "indexed": np.bool_(self.indexed)}

    def count(self, line_hashes: np.ndarray) -> np.ndarray:
        if not len(self.hashes):
            return np.zeros(len(line_hashes), dtype=np.int64)
        pos = np.searchsorted(self.hashes, line_hashes).clip(0, len(self.hashes) - 1)
        return np.where(self.hashes[pos] == line_hashes, self.counts[pos], 0)


class LinesKind(Kind[LineSegment]):
    """The segments of the line counts, over the slice documents and the line hashes recorded with them."""

    pool = "slices"
    group = f"slices-lines-v{VERSION}"

    def end(self, snapshot: PoolSnapshot) -> Bounds:
        meta = snapshot.manifest["pools"]["slices"]
        return meta["docs"], meta["docs_bytes"], snapshot.manifest["lines"]

    def build(
        self, snapshot: PoolSnapshot, start: Bounds, end: Bounds, table: DocTable, nl: Sequence[int | None]
    ) -> LineSegment:
        all_hashes = snapshot.line_hashes(start[2], end[2])
        hashes, counts = np.unique(all_hashes, return_counts=True)
        by_hash, by_hash_docs = np.zeros(0, dtype="<u8"), np.zeros(0, dtype=np.uint32)
        indexed = None not in nl and sum(nl) == len(all_hashes)  # type: ignore[arg-type]  # no None in it
        if indexed:
            doc_of = np.repeat(np.arange(start[0], end[0], dtype=np.uint32), np.asarray(nl, dtype=np.int64))
            order = np.argsort(all_hashes, kind="stable")
            by_hash, by_hash_docs = all_hashes[order], doc_of[order]
        return LineSegment(
            start, end, snapshot.stamp, table, hashes, counts.astype(np.int64), by_hash, by_hash_docs, indexed
        )

    def merge(self, parts: Sequence[LineSegment], stamp: int) -> LineSegment:
        hashes, where = np.unique(np.concatenate([p.hashes for p in parts]), return_inverse=True)
        counts = np.bincount(where, weights=np.concatenate([p.counts for p in parts]), minlength=len(hashes))
        indexed = all(p.indexed for p in parts)
        by_hash, by_hash_docs = np.zeros(0, dtype="<u8"), np.zeros(0, dtype=np.uint32)
        if indexed:  # each part sorted with its documents ascending under one hash: a stable sort keeps that
            every = np.concatenate([p.by_hash for p in parts])
            order = np.argsort(every, kind="stable")
            by_hash, by_hash_docs = every[order], np.concatenate([p.by_hash_docs for p in parts])[order]
        table = DocTable.joined([p.table for p in parts])
        start, end = parts[0].start, parts[-1].end
        return LineSegment(start, end, stamp, table, hashes, counts.astype(np.int64), by_hash, by_hash_docs, indexed)

    def read(self, arrays: dict[str, Any], start: Bounds, end: Bounds, stamp: int, table: DocTable) -> LineSegment:
        hashes, counts, by_hash, by_hash_docs = (arrays[k] for k in ("hashes", "counts", "by_hash", "by_hash_docs"))
        if len(start) != 3 or len(hashes) != len(counts) or len(by_hash) != len(by_hash_docs):
            raise ValueError("line counts of another layout")
        if hashes.dtype != np.uint64 or by_hash.dtype != np.uint64 or by_hash_docs.dtype != np.uint32:
            raise ValueError("line counts of other types")
        return LineSegment(start, end, stamp, table, hashes, counts, by_hash, by_hash_docs, bool(arrays["indexed"]))


LINES = LinesKind()


class LineCounts:
    """Per-site distinct-line counts over all states, built from the pools' line hashes, cached in segments; and,
    for pools that record each state's number of lines, which slice documents show a line."""

    def __init__(self, segments: Sequence[LineSegment], site_states: dict[str, int]):
        self.segments, self.site_states = list(segments), site_states
        self.indexed = all(s.indexed for s in segments)

    def docs_with(self, line_hash: int) -> np.ndarray:
        """Slice documents (dead generations included) that show the line with this hash; empty when unknown."""
        if not self.indexed:
            return np.zeros(0, dtype=np.int64)
        key = np.uint64(line_hash)
        found = []
        for s in self.segments:
            lo, hi = np.searchsorted(s.by_hash, key), np.searchsorted(s.by_hash, key, side="right")
            found.append(s.by_hash_docs[lo:hi].astype(np.int64))
        return np.concatenate(found) if found else np.zeros(0, dtype=np.int64)

    def threshold(self, site: str) -> int:
        return max(MIN_STATES, int(SHARE * self.site_states.get(site, 0)))

    def count(self, line_hashes: np.ndarray) -> np.ndarray:
        total = np.zeros(len(line_hashes), dtype=np.int64)
        for s in self.segments:
            total += s.count(line_hashes)
        return total

    def is_boilerplate(self, line_hashes: np.ndarray, site: str) -> np.ndarray:
        return self.count(line_hashes) >= self.threshold(site)


def load_line_counts(snapshot: PoolSnapshot, *, write: bool = True) -> LineCounts:
    """The counts for this snapshot: from the cached segments, what they lack built (and cached when `write`)."""
    segments = load_segments(snapshot, LINES, write=write)
    generations = snapshot.manifest["trajectories"]
    site_states: dict[str, int] = {}
    for s in segments:
        for site, n in s.table.site_counts(s.table.live(generations)).items():
            site_states[site] = site_states.get(site, 0) + n
    return LineCounts(segments, site_states)
