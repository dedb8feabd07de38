"""BM25 over a pool: per-term columns of (document, weight) built from the postings in one vectorised pass and
cached on disk, so a query touches only its own terms' columns. The one BM25 of runbook: method R on the host and
the `recall` program in the query sandbox both score with it.

The host builds the cache when it commits an insert (the sandbox sees the store read-only); a reader that finds no
current cache builds the index in memory.
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .files import load_arrays, save_atomic
from .pools import PoolError, PoolSnapshot
from .text import stem
from .weights import K1, B, idf, term_weight  # noqa: F401  (the formula, importable without numpy)

INDEX_VERSION = 4
"""Bump when tokenising, stemming or weighting changes: cached indexes of another version are rebuilt."""
DEFAULT_FIELDS = {"slices": {"page": 1.0, "context": 2.0}, "events": {"event": 1.0}, "notes": {"note": 1.0}}
"""Field weights (tf multipliers) per pool; the cache built at insert holds these."""


@dataclass
class BM25Index:
    """Scores documents of one pool for weighted query terms (terms are stems, see text.stem)."""

    indptr: np.ndarray
    """Term t's postings are docs[indptr[t]:indptr[t + 1]] with weights[...] (documents ascending)."""
    docs: np.ndarray
    weights: np.ndarray
    term_ids: dict[str, int]
    live: np.ndarray
    """True for documents of each trajectory's current generation."""

    @property
    def n_docs(self) -> int:
        return len(self.live)

    def df(self, term: str) -> int:
        tid = self.term_ids.get(term)
        return 0 if tid is None else int(self.indptr[tid + 1] - self.indptr[tid])

    def scores(self, query: dict[str, float]) -> np.ndarray:
        scores = np.zeros(self.n_docs, dtype=np.float32)
        for term, weight in query.items():
            tid = self.term_ids.get(term)
            if tid is not None:
                lo, hi = int(self.indptr[tid]), int(self.indptr[tid + 1])
                scores[self.docs[lo:hi]] += np.float32(weight) * self.weights[lo:hi]  # docs are unique per term
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


def build_index(
    snapshot: PoolSnapshot, pool: str, fields: dict[str, float], *, k1: float = K1, b: float = B
) -> BM25Index:
    """BM25 weights of `pool` over the given fields (field -> tf multiplier), dead generations left out."""
    live = snapshot.live(pool)
    n_docs = len(live)
    terms = snapshot.terms()
    stems: dict[str, int] = {}
    term_stem = np.fromiter((stems.setdefault(stem(t), len(stems)) for t in terms), dtype=np.uint64, count=len(terms))
    # one key per posting, (stem << 32) | document, sorted once (stably: the order tfs add up in stays the same):
    # half the memory of sorting separate int64 columns (the largest index of a billion-token store took 5.6 GB)
    keys, tfs = [], []
    for field, weight in fields.items():
        post = snapshot.postings(pool, field)
        post = post[live[post["doc"]]] if n_docs else post[:0]
        stems_of = term_stem[post["term"]] if len(post) else np.empty(0, dtype=np.uint64)
        keys.append((stems_of << np.uint64(32)) | post["doc"].astype(np.uint64))
        tfs.append(post["tf"].astype(np.float32) * weight)
        del post, stems_of
    key, tf = np.concatenate(keys), np.concatenate(tfs)
    del keys, tfs
    order = np.argsort(key, kind="stable")
    key, tf = key[order], tf[order]
    del order
    # one entry per (term, doc): stems and fields that meet in a document add up
    first = np.ones(len(key), dtype=bool)
    first[1:] = key[1:] != key[:-1]
    starts = np.flatnonzero(first)
    del first
    tf = np.add.reduceat(tf, starts) if len(starts) else tf
    key = key[starts]
    doc, col = (key & np.uint64(0xFFFFFFFF)).astype(np.uint32), (key >> np.uint64(32)).astype(np.uint32)
    del key, starts
    n_live = max(int(live.sum()), 1)
    doc_len = np.bincount(doc, weights=tf, minlength=n_docs)
    avg = doc_len[live].mean() if live.any() else 1.0
    df = np.bincount(col, minlength=max(len(stems), 1))
    weights = (idf(n_live, df).astype(np.float32)[col] * term_weight(tf, doc_len[doc], avg, k1, b)).astype(np.float32)
    indptr = np.concatenate(([0], np.cumsum(df))).astype(np.int64)
    return BM25Index(indptr, doc.astype(np.uint32), weights, stems, live)


def cache_path(snapshot: PoolSnapshot, pool: str, fields: dict[str, float]) -> Path:
    key = f"{pool}-v{INDEX_VERSION}-" + "-".join(f"{f}{w:g}" for f, w in sorted(fields.items()))
    return snapshot.cache_path(key)


def load_index(
    snapshot: PoolSnapshot, pool: str, fields: dict[str, float] | None = None, *, write: bool = True
) -> BM25Index:
    """The pool's index for this manifest stamp: from the cache when it is current, else built (and cached when
    `write` and the store is writable)."""
    fields = fields or DEFAULT_FIELDS[pool]
    path = cache_path(snapshot, pool, fields)
    cached = _read_cache(snapshot, path)
    if cached is None:  # a store written before caches were named by stamp: its cache is current until an insert
        cached = _read_cache(snapshot, path.with_name(path.name.rsplit("-s", 1)[0] + ".npz"))
    if cached is not None:
        return cached
    index = build_index(snapshot, pool, fields)
    if write:
        write_cache(path, snapshot.stamp, index)
    return index


def _read_cache(snapshot: PoolSnapshot, path: Path) -> BM25Index | None:
    try:
        with snapshot.open(path) as fh:
            data = load_arrays(fh)  # mapped: a query pages in its own terms' postings only
        if int(data["stamp"]) != snapshot.stamp:
            return None
        terms = bytes(data["terms"]).decode("utf-8").split("\n") if data["terms"].size else []
        return BM25Index(
            data["indptr"], data["docs"], data["weights"], {t: i for i, t in enumerate(terms)}, data["live"]
        )
    except (OSError, KeyError, ValueError, EOFError, zipfile.BadZipFile, PoolError):
        return None  # a missing, stale, truncated or planted cache is rebuilt


def write_cache(path: Path, stamp: int, index: BM25Index) -> None:
    """Best effort: a read-only store simply builds in memory next time."""
    terms = sorted(index.term_ids, key=index.term_ids.__getitem__)
    save_atomic(
        path,
        stamp=np.int64(stamp),
        indptr=index.indptr,
        docs=index.docs,
        weights=index.weights,
        live=index.live,
        terms=np.frombuffer("\n".join(terms).encode("utf-8"), dtype=np.uint8),
    )


def query_terms(text_terms: list[str], phrase_terms: list[str], phrase_weight: float = 1.5) -> dict[str, float]:
    """Query term weights: each distinct stem once, stems from exact phrases weighted up."""
    weights: dict[str, float] = {}
    for term in text_terms:
        weights[stem(term)] = max(weights.get(stem(term), 0.0), 1.0)
    for term in phrase_terms:
        weights[stem(term)] = max(weights.get(stem(term), 0.0), phrase_weight)
    return weights
