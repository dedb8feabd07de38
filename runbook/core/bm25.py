"""BM25 over a pool, from cached segments of postings (core.segments): per stem, its documents and their term
frequencies after the field weights, and each document's length. A query's terms get their weights when first
asked for, over the documents live in the snapshot: the idf and the mean length change with every insert, so the
weights are not stored; the formula, its dtypes and the order of its sums are those of the single index that was
rebuilt over the whole store at every insert, so every score is the same to the bit. The one BM25 of runbook:
method R on the host and the `recall` program in the query sandbox both score with it.

The host builds the segments when it commits an insert (the sandbox sees the store read-only); a reader that finds
them missing or stale builds what is missing in memory.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .pools import PoolError, PoolSnapshot
from .segments import Bounds, DocTable, Kind, Segment, blob, load_segments, unblob
from .text import stem
from .weights import K1, B, idf, term_weight  # noqa: F401  (the formula, importable without numpy)

INDEX_VERSION = 5
"""Bump when tokenising, stemming, weighting or the segments' layout changes: cached segments of another version
are built again. 5: segments of term frequencies, weighted at query time."""
DEFAULT_FIELDS = {"slices": {"page": 1.0, "context": 2.0}, "events": {"event": 1.0}, "notes": {"note": 1.0}}
"""Field weights (tf multipliers) per pool; the segments built at insert hold these."""
CHUNK_POSTINGS = 1 << 23
"""A range of documents with more postings is sorted in parts of about this many, then merged: a billion tokens'
slices (61M postings) sorted at once took 2.6 GB."""
WEIGHTS_KEPT = 1 << 22
"""Postings whose weights an open index keeps for the next query (8 bytes each)."""


@dataclass
class Postings(Segment):
    """One segment of a pool's index."""

    stems: list[str]
    """Sorted."""
    indptr: np.ndarray
    """Stem s's postings are docs[indptr[s]:indptr[s + 1]] with tf[...] (documents ascending)."""
    docs: np.ndarray
    tf: np.ndarray
    """Each posting's term frequency: its stem's counts in the document, times their fields' weights, summed."""
    doc_len: np.ndarray
    """Per document of the segment, its tf summed."""

    @property
    def size(self) -> int:
        return len(self.docs) + self.end[0] - self.start[0]

    def span(self, term: str) -> tuple[int, int]:
        """Where the stem's postings are (an empty span when the segment lacks it)."""
        i = bisect_left(self.stems, term)
        if i < len(self.stems) and self.stems[i] == term:
            return int(self.indptr[i]), int(self.indptr[i + 1])
        return 0, 0

    def arrays(self) -> dict[str, Any]:
        columns = {"indptr": self.indptr, "docs": self.docs, "tf": self.tf, "doc_len": self.doc_len}
        return {**super().arrays(), "stems": blob(self.stems), **columns}


class BM25Index:
    """Scores documents of one pool for weighted query terms (terms are stems, see text.stem)."""

    def __init__(self, segments: Sequence[Postings], live: np.ndarray, *, k1: float = K1, b: float = B):
        self.segments, self.live, self.k1, self.b = list(segments), live, k1, b
        """`live`: true for documents of each trajectory's current generation."""
        self.doc_len = np.concatenate([s.doc_len for s in segments]) if segments else np.zeros(0)
        self.n_live = max(int(live.sum()), 1)
        self.avg_len = self.doc_len[live].mean() if live.any() else 1.0
        self._kept: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._kept_size = 0

    @property
    def n_docs(self) -> int:
        return len(self.live)

    def df(self, term: str) -> int:
        """Live documents with the term."""
        return len(self.postings(term)[0])

    def postings(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """(live documents with the term, ascending; the term's BM25 weight in each, float32)."""
        found = self._kept.get(term)
        if found is None:
            found = self._weighed(term)
            if self._kept_size + len(found[0]) > WEIGHTS_KEPT:
                self._kept, self._kept_size = {}, 0
            self._kept[term] = found
            self._kept_size += len(found[0])
        return found

    def _weighed(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        docs, tfs = [], []
        for segment in self.segments:
            lo, hi = segment.span(term)
            if lo < hi:
                doc = segment.docs[lo:hi]
                if doc[0] < segment.start[0] or doc[-1] >= segment.end[0]:
                    raise PoolError("a cached segment of an index is corrupt: run `runbook reindex`")
                keep = self.live[doc]
                docs.append(doc[keep])
                tfs.append(segment.tf[lo:hi][keep])
        if not docs:
            return np.zeros(0, dtype=np.uint32), np.zeros(0, dtype=np.float32)
        doc, tf = np.concatenate(docs), np.concatenate(tfs)
        # the single index's expression, dtypes and all: idf as float32, times the float64 term weight, as float32
        term_idf = idf(self.n_live, np.asarray([len(doc)], dtype=np.int64)).astype(np.float32)
        weights = (term_idf * term_weight(tf, self.doc_len[doc], self.avg_len, self.k1, self.b)).astype(np.float32)
        return doc, weights

    def scores(self, query: dict[str, float]) -> np.ndarray:
        scores = np.zeros(self.n_docs, dtype=np.float32)
        for term, weight in query.items():
            docs, weights = self.postings(term)
            if len(docs):
                scores[docs] += np.float32(weight) * weights  # docs are unique per term
        return scores

    def top(self, query: dict[str, float], k: int) -> list[tuple[int, float]]:
        """The k best live documents with a positive score, best first."""
        scores = self.scores(query)
        k = min(k, int((scores > 0).sum()))
        if k <= 0:
            return []
        best = np.argpartition(-scores, k - 1)[:k]
        best = best[np.argsort(-scores[best], kind="stable")]
        return [(int(d), float(scores[d])) for d in best]


class PostingsKind(Kind[Postings]):
    """The segments of one pool's index with given field weights."""

    def __init__(self, pool: str, fields: dict[str, float]):
        self.pool, self.fields = pool, dict(fields)
        self.order = sorted(fields)
        """The fields in the order of their offsets in a segment's bounds."""
        self.group = f"{pool}-v{INDEX_VERSION}-" + "-".join(f"{f}{w:g}" for f, w in sorted(fields.items()))

    def end(self, snapshot: PoolSnapshot) -> Bounds:
        meta = snapshot.manifest["pools"][self.pool]
        return (meta["docs"], meta["docs_bytes"], *(meta["fields"].get(f, 0) for f in self.order))

    def build(
        self, snapshot: PoolSnapshot, start: Bounds, end: Bounds, table: DocTable, nl: Sequence[int | None]
    ) -> Postings:
        parts = [self._columns(snapshot, lo, hi) for lo, hi in self._chunks(snapshot, start, end)]
        columns = parts[0] if len(parts) == 1 else _merged_columns(parts)
        return Postings(start, end, snapshot.stamp, table, *columns)

    def merge(self, parts: Sequence[Postings], stamp: int) -> Postings:
        columns = _merged_columns([(p.stems, p.indptr, p.docs, p.tf, p.doc_len) for p in parts])
        return Postings(parts[0].start, parts[-1].end, stamp, DocTable.joined([p.table for p in parts]), *columns)

    def read(self, arrays: dict[str, Any], start: Bounds, end: Bounds, stamp: int, table: DocTable) -> Postings:
        indptr, docs, tf, doc_len = arrays["indptr"], arrays["docs"], arrays["tf"], arrays["doc_len"]
        dtypes = (indptr.dtype, docs.dtype, tf.dtype, doc_len.dtype)
        if dtypes != (np.int64, np.uint32, np.float32, np.float64) or len(start) != 2 + len(self.order):
            raise ValueError("a segment of another layout")
        if len(indptr) < 1 or indptr[0] != 0 or indptr[-1] != len(docs):
            raise ValueError("postings of another length than their columns")
        if len(tf) != len(docs) or len(doc_len) != end[0] - start[0]:
            raise ValueError("columns of different lengths")
        return Postings(start, end, stamp, table, unblob(arrays["stems"], len(indptr) - 1), indptr, docs, tf, doc_len)

    def aligned(self, snapshot: PoolSnapshot, start: Bounds, end: Bounds) -> bool:
        if not super().aligned(snapshot, start, end):
            return False
        for i, field in enumerate(self.order, 2):
            lo, hi, count = start[i], end[i], snapshot.manifest["pools"][self.pool]["fields"].get(field, 0)
            doc = _doc_at(snapshot, self.pool, field)
            if lo > 0 and doc(lo - 1) >= start[0] or hi < count and doc(hi) < end[0]:
                return False  # a posting of the segment's documents lies outside its offsets
            if lo < hi and (doc(lo) < start[0] or doc(hi - 1) >= end[0]):
                return False
        return True

    def _chunks(self, snapshot: PoolSnapshot, start: Bounds, end: Bounds) -> list[tuple[Bounds, Bounds]]:
        """The range cut into parts of about CHUNK_POSTINGS postings (bounds of documents and postings only)."""
        total = sum(end[2:]) - sum(start[2:])
        parts = max(1, -(-total // CHUNK_POSTINGS))
        cuts = [start[0] + (end[0] - start[0]) * n // parts for n in range(1, parts)]
        bounds = [start]
        for doc in cuts:
            offsets = (
                _first_posting(snapshot, self.pool, field, doc, start[i], end[i])
                for i, field in enumerate(self.order, 2)
            )
            bounds.append((doc, -1, *offsets))
        bounds.append(end)
        return [(lo, hi) for lo, hi in zip(bounds, bounds[1:]) if hi[0] > lo[0]]

    def _columns(self, snapshot: PoolSnapshot, start: Bounds, end: Bounds) -> tuple:
        """(stems, indptr, docs, tf, doc_len) of the documents from `start` to `end`."""
        posts = {field: self._postings(snapshot, field, start, end) for field in self.fields}
        stems, local = _stems_of(snapshot.terms(), list(posts.values()))
        columns: list[list[np.ndarray]] = [[], [], []]
        for field, weight in self.fields.items():  # the caller's order of the fields, as the sums have always had
            post = posts.pop(field)
            columns[0].append(local[post["term"]])
            columns[1].append(post["doc"].astype(np.uint32))  # copies: the postings read go now
            columns[2].append(post["tf"].astype(np.float32) * weight)
            del post
        joined = []
        while columns:  # one column at a time: its parts go as it is joined
            parts = columns.pop(0)
            joined.append(parts[0] if len(parts) == 1 else np.concatenate(parts))
            del parts
        return _sorted_columns(joined, stems, start[0], end[0])

    def _postings(self, snapshot: PoolSnapshot, field: str, start: Bounds, end: Bounds) -> np.ndarray:
        i = 2 + self.order.index(field)
        post = snapshot.postings(self.pool, field, start[i], end[i])
        if len(post) and (post["doc"][0] < start[0] or post["doc"][-1] >= end[0]):
            raise PoolError(f"{snapshot.root}: postings out of step with their documents; run `runbook reindex`")
        return post


def _stems_of(terms: list[str], posts: list[np.ndarray]) -> tuple[list[str], np.ndarray]:
    """(the sorted stems of the terms in `posts`, each term's number among them by its id)."""
    present = np.zeros(len(terms), dtype=bool)
    for post in posts:
        present[post["term"]] = True
    term_ids = np.flatnonzero(present)
    stems_of = [stem(terms[t]) for t in term_ids.tolist()]
    stems = sorted(set(stems_of))
    where = {s: i for i, s in enumerate(stems)}
    local = np.zeros(len(terms), dtype=np.uint32)
    local[term_ids] = np.fromiter((where[s] for s in stems_of), dtype=np.uint32, count=len(stems_of))
    return stems, local


def _sorted_columns(columns: list[np.ndarray], stems: list[str], first: int, stop: int) -> tuple:
    """The postings (stem numbers, documents, tfs: `columns`, taken over and emptied, so that each array goes as
    soon as it is sorted) in (stem, document) order, stably (the order tfs add up in is the single index's, which
    sorted one key per posting): by document first (each field's postings are in document order already, so this
    merges runs), then by stem (16-bit stem numbers are sorted by radix; one sort of 64-bit keys took 1.6 times as
    long)."""
    col, doc, tf = columns
    columns.clear()
    order = np.argsort(doc, kind="stable").astype(np.int32 if len(doc) < 1 << 31 else np.int64)
    narrow = np.uint16 if len(stems) <= 1 << 16 else np.uint32
    order = order[np.argsort(col[order].astype(narrow), kind="stable")]
    col = col[order]
    doc = doc[order]
    tf = tf[order]
    del order
    # one entry per (stem, document): raw terms of one stem and the fields that meet in a document add up
    new = np.ones(len(doc), dtype=bool)
    new[1:] = (col[1:] != col[:-1]) | (doc[1:] != doc[:-1])
    starts = np.flatnonzero(new)
    del new
    tf = np.add.reduceat(tf, starts) if len(starts) else tf
    doc, col = doc[starts], col[starts].astype(np.int64)
    del starts
    # a document's length: its (stem, document) tfs summed in float64 as the single index summed them (whole
    # numbers with the default weights, exact in any order)
    doc_len = np.bincount(doc - np.uint32(first), weights=tf, minlength=stop - first)
    indptr = np.concatenate(([0], np.cumsum(np.bincount(col, minlength=len(stems))))).astype(np.int64)
    return stems, indptr, doc.astype(np.uint32), tf.astype(np.float32), doc_len.astype(np.float64)


def _merged_columns(parts: Sequence[tuple]) -> tuple:
    """The columns of consecutive parts as one: each stem's postings are its parts' in order (their documents are
    ascending already), placed without sorting."""
    stems = sorted(set().union(*(p[0] for p in parts)))
    where = {s: i for i, s in enumerate(stems)}
    maps = [np.fromiter((where[s] for s in p[0]), dtype=np.int64, count=len(p[0])) for p in parts]
    counts = np.zeros((len(parts), len(stems)), dtype=np.int64)
    for n, (part, to) in enumerate(zip(parts, maps)):
        counts[n, to] = np.diff(part[1])
    indptr = np.concatenate(([0], np.cumsum(counts.sum(axis=0)))).astype(np.int64)
    before = indptr[:-1] + np.cumsum(counts, axis=0) - counts  # where each part's postings of a stem begin
    docs, tf = np.empty(int(indptr[-1]), dtype=np.uint32), np.empty(int(indptr[-1]), dtype=np.float32)
    for n, (part, to) in enumerate(zip(parts, maps)):
        _place(part[1], part[2], part[3], before[n][to], docs, tf)
    return stems, indptr, docs, tf, np.concatenate([p[4] for p in parts])


def _place(
    indptr: np.ndarray, docs: np.ndarray, tf: np.ndarray, base: np.ndarray, out_docs: np.ndarray, out_tf: np.ndarray
) -> None:
    """Copy a part's postings to where its stems' runs begin (`base`), a block of stems at a time."""
    n_stems, lo = len(base), 0
    while lo < n_stems:
        hi = int(np.searchsorted(indptr, indptr[lo] + CHUNK_POSTINGS, side="right")) - 1
        hi = min(max(hi, lo + 1), n_stems)
        p0, p1 = int(indptr[lo]), int(indptr[hi])
        where = np.repeat(base[lo:hi] - indptr[lo:hi], np.diff(indptr[lo : hi + 1])) + np.arange(p0, p1)
        out_docs[where], out_tf[where] = docs[p0:p1], tf[p0:p1]
        lo = hi


def _doc_at(snapshot: PoolSnapshot, pool: str, field: str) -> Callable[[int], int]:
    """The document of the field's posting n, read alone."""
    return lambda n: int(snapshot.postings(pool, field, n, n + 1)["doc"][0])


def _first_posting(snapshot: PoolSnapshot, pool: str, field: str, doc: int, lo: int, hi: int) -> int:
    """The first posting from `lo` to `hi` whose document is `doc` or later (a binary search, a posting read at a
    time)."""
    doc_at = _doc_at(snapshot, pool, field)
    while lo < hi:
        mid = (lo + hi) // 2
        if doc_at(mid) < doc:
            lo = mid + 1
        else:
            hi = mid
    return lo


def load_index(
    snapshot: PoolSnapshot, pool: str, fields: dict[str, float] | None = None, *, write: bool = True
) -> BM25Index:
    """The pool's index for this snapshot: from its cached segments, what they lack built (and cached when `write`
    and the store is writable)."""
    segments = load_segments(snapshot, PostingsKind(pool, fields or DEFAULT_FIELDS[pool]), write=write)
    return BM25Index(segments, live(snapshot, segments))


def live(snapshot: PoolSnapshot, segments: Sequence[Segment]) -> np.ndarray:
    """True for each document of the segments that is of its trajectory's current generation."""
    generations = snapshot.manifest["trajectories"]
    found = [s.table.live(generations) for s in segments]
    return np.concatenate(found) if found else np.zeros(0, dtype=bool)


def query_terms(text_terms: list[str], phrase_terms: list[str], phrase_weight: float = 1.5) -> dict[str, float]:
    """Query term weights: each distinct stem once, stems from exact phrases weighted up."""
    weights: dict[str, float] = {}
    for term in text_terms:
        weights[stem(term)] = max(weights.get(stem(term), 0.0), 1.0)
    for term in phrase_terms:
        weights[stem(term)] = max(weights.get(stem(term), 0.0), phrase_weight)
    return weights
