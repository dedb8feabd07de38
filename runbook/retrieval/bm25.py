"""BM25 over a pool: a docs x terms weight matrix built from the postings in one vectorised pass, cached on disk.

Building from postings takes well under a second for the whole shared data set, so an insert only appends
postings and the matrix is rebuilt lazily, the first time a query sees a new manifest stamp.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ..errors import UnsafeStoreFile
from .storage import PoolSnapshot
from .text import stem

K1 = 1.2
B = 0.75
INDEX_VERSION = 3
"""Bump when tokenising, stemming or weighting changes: cached matrices of another version are rebuilt."""


@dataclass
class BM25Index:
    """Scores documents of one pool for weighted query terms (terms are stems, see text.stem)."""

    matrix: sp.csc_matrix
    term_ids: dict[str, int]
    live: np.ndarray

    @property
    def n_docs(self) -> int:
        return self.matrix.shape[0]

    def scores(self, query: dict[str, float]) -> np.ndarray:
        cols, weights = [], []
        for term, weight in query.items():
            tid = self.term_ids.get(term)
            if tid is not None:
                cols.append(tid)
                weights.append(weight)
        if not cols:
            return np.zeros(self.n_docs, dtype=np.float32)
        return np.asarray(self.matrix[:, cols] @ np.asarray(weights, dtype=np.float32)).ravel()

    def top(self, query: dict[str, float], k: int) -> list[tuple[int, float]]:
        """The k best live documents with a positive score, best first."""
        scores = self.scores(query)
        k = min(k, int((scores > 0).sum()))
        if k <= 0:
            return []
        best = np.argpartition(-scores, k - 1)[:k]
        best = best[np.argsort(-scores[best], kind="stable")]
        return [(int(d), float(scores[d])) for d in best]


def build_index(snapshot: PoolSnapshot, pool: str, fields: dict[str, float], *, k1: float = K1, b: float = B
                ) -> BM25Index:
    """BM25 weights of `pool` over the given fields (field -> tf multiplier), dead generations left out."""
    live = snapshot.live(pool)
    n_docs = len(live)
    terms = snapshot.terms()
    stems: dict[str, int] = {}
    term_stem = np.fromiter((stems.setdefault(stem(t), len(stems)) for t in terms), dtype=np.int64,
                            count=len(terms))
    docs, cols, tfs = [], [], []
    for field, weight in fields.items():
        post = snapshot.postings(pool, field)
        keep = live[post["doc"]] if n_docs else np.zeros(0, dtype=bool)
        post = post[keep]
        docs.append(post["doc"].astype(np.int64))
        cols.append(term_stem[post["term"]] if len(post) else np.empty(0, dtype=np.int64))
        tfs.append(post["tf"].astype(np.float32) * weight)
    doc = np.concatenate(docs) if docs else np.empty(0, dtype=np.int64)
    col = np.concatenate(cols) if cols else np.empty(0, dtype=np.int64)
    tf = np.concatenate(tfs) if tfs else np.empty(0, dtype=np.float32)
    shape = (n_docs, max(len(stems), 1))
    counts = sp.csc_matrix((tf, (doc, col)), shape=shape)  # duplicates (stems, fields) are summed
    counts.sum_duplicates()
    weights = _bm25_weights(counts, live, k1, b)
    return BM25Index(weights, stems, live)


def _bm25_weights(counts: sp.csc_matrix, live: np.ndarray, k1: float, b: float) -> sp.csc_matrix:
    coo = counts.tocoo()
    n_live = max(int(live.sum()), 1)
    doc_len = np.bincount(coo.row, weights=coo.data, minlength=counts.shape[0])
    avg = doc_len[live].mean() if live.any() else 1.0
    df = np.bincount(coo.col, minlength=counts.shape[1])
    idf = np.log1p((n_live - df + 0.5) / (df + 0.5)).astype(np.float32)
    tf = coo.data
    norm = k1 * (1 - b + b * doc_len[coo.row] / max(avg, 1e-9))
    data = (idf[coo.col] * tf * (k1 + 1) / (tf + norm)).astype(np.float32)
    return sp.csc_matrix((data, (coo.row, coo.col)), shape=counts.shape)


def load_index(snapshot: PoolSnapshot, pool: str, fields: dict[str, float]) -> BM25Index:
    """The pool's index for this manifest stamp: from the cache when it is current, else built and cached."""
    key = f"{pool}-v{INDEX_VERSION}-" + "-".join(f"{f}{w:g}" for f, w in sorted(fields.items()))
    path = snapshot.cache_dir / f"{key}.npz"
    cached = _read_cache(snapshot, path)
    if cached is not None:
        return cached
    index = build_index(snapshot, pool, fields)
    _write_cache(path, snapshot.stamp, index)
    return index


def _read_cache(snapshot: PoolSnapshot, path: Path) -> BM25Index | None:
    try:
        with snapshot.open(path) as fh, np.load(fh, allow_pickle=False) as data:
            if int(data["stamp"]) != snapshot.stamp:
                return None
            matrix = sp.csc_matrix((data["data"], data["indices"], data["indptr"]), shape=tuple(data["shape"]))
            terms = bytes(data["terms"]).decode("utf-8").split("\n") if data["terms"].size else []
            return BM25Index(matrix, {t: i for i, t in enumerate(terms)}, data["live"])
    except (OSError, KeyError, ValueError, UnsafeStoreFile):  # a missing, stale or planted cache is rebuilt
        return None


def _write_cache(path: Path, stamp: int, index: BM25Index) -> None:
    """Best effort: a read-only store simply rebuilds in memory next time."""
    terms = sorted(index.term_ids, key=index.term_ids.get)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.stem}.tmp{os.getpid()}.npz")
        np.savez(tmp, stamp=np.int64(stamp), data=index.matrix.data, indices=index.matrix.indices,
                 indptr=index.matrix.indptr, shape=np.asarray(index.matrix.shape), live=index.live,
                 terms=np.frombuffer("\n".join(terms).encode("utf-8"), dtype=np.uint8))
        os.replace(tmp, path)
    except OSError:
        pass


def query_terms(text_terms: list[str], phrase_terms: list[str], phrase_weight: float = 1.5) -> dict[str, float]:
    """Query term weights: each distinct stem once, stems from exact phrases weighted up."""
    weights: dict[str, float] = {}
    for term in text_terms:
        weights[stem(term)] = max(weights.get(stem(term), 0.0), 1.0)
    for term in phrase_terms:
        weights[stem(term)] = max(weights.get(stem(term), 0.0), phrase_weight)
    return weights
