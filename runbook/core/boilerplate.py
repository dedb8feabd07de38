"""Which states show a given content line: lines on most pages of a site (menus, footers) are boilerplate, and the
states that show the line that answers a question corroborate each other (runbook.core.recall's sightings)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from .files import load_arrays, save_atomic
from .pools import PoolError, PoolSnapshot

MIN_STATES = 8
SHARE = 0.3
"""A line on at least this share of a site's states (and on MIN_STATES of them) is the site's furniture."""


class LineCounts:
    """Per-site distinct-line counts over all states, built from the pools' line hashes, cached per stamp; and, for
    pools that record each state's number of lines, which slice documents show a line."""

    def __init__(
        self,
        hashes: np.ndarray,
        counts: np.ndarray,
        site_states: dict[str, int],
        by_hash: np.ndarray | None = None,
        by_hash_docs: np.ndarray | None = None,
    ):
        self.hashes, self.counts, self.site_states = hashes, counts, site_states
        self.by_hash, self.by_hash_docs = by_hash, by_hash_docs

    def docs_with(self, line_hash: int) -> np.ndarray:
        """Slice documents (dead generations included) that show the line with this hash; empty when unknown."""
        if self.by_hash is None or not len(self.by_hash):
            return np.zeros(0, dtype=np.int64)
        assert self.by_hash_docs is not None  # built and loaded with by_hash
        key = np.uint64(line_hash)
        lo, hi = np.searchsorted(self.by_hash, key), np.searchsorted(self.by_hash, key, side="right")
        return self.by_hash_docs[lo:hi].astype(np.int64)

    def threshold(self, site: str) -> int:
        return max(MIN_STATES, int(SHARE * self.site_states.get(site, 0)))

    def count(self, line_hashes: np.ndarray) -> np.ndarray:
        if not len(self.hashes):
            return np.zeros(len(line_hashes), dtype=np.int64)
        pos = np.searchsorted(self.hashes, line_hashes).clip(0, len(self.hashes) - 1)
        return np.where(self.hashes[pos] == line_hashes, self.counts[pos], 0)

    def is_boilerplate(self, line_hashes: np.ndarray, site: str) -> np.ndarray:
        return self.count(line_hashes) >= self.threshold(site)


def load_line_counts(snapshot: PoolSnapshot, *, write: bool = True) -> LineCounts:
    """The counts for this manifest stamp: from the cache when current, else built (and cached when `write`)."""
    path = snapshot.cache_path("lines")
    for cached in (path, snapshot.cache_dir / "lines.npz"):  # the name before caches were named by stamp
        found = _read_counts(snapshot, cached)
        if found is not None:
            return found
    docs = snapshot.docs("slices")
    site_states: dict[str, int] = {}
    for doc, alive in zip(docs, snapshot.live("slices")):
        if alive:
            site_states[doc.get("s") or ""] = site_states.get(doc.get("s") or "", 0) + 1
    all_hashes = snapshot.line_hashes()
    hashes, counts = np.unique(all_hashes, return_counts=True)
    by_hash, by_hash_docs = _line_index(all_hashes, [doc.get("nl") for doc in docs])
    if write:
        save_atomic(
            path,
            stamp=np.int64(snapshot.stamp),
            hashes=hashes,
            counts=counts.astype(np.int32),
            sites=np.frombuffer("\n".join(site_states).encode("utf-8"), dtype=np.uint8),
            site_states=np.asarray(list(site_states.values()), dtype=np.int64),
            by_hash=by_hash,
            by_hash_docs=by_hash_docs,
        )
    return LineCounts(hashes, counts, site_states, by_hash, by_hash_docs)


def _read_counts(snapshot: PoolSnapshot, path: Path) -> LineCounts | None:
    """The cached counts at `path` when they are of this stamp."""
    try:
        with snapshot.open(path) as fh:
            data = load_arrays(fh)
        if int(data["stamp"]) != snapshot.stamp:
            return None
        sites = bytes(data["sites"]).decode("utf-8").split("\n") if data["sites"].size else []
        return LineCounts(
            data["hashes"],
            data["counts"],
            dict(zip(sites, data["site_states"].tolist())),
            data["by_hash"],
            data["by_hash_docs"],
        )
    except (OSError, KeyError, ValueError, EOFError, zipfile.BadZipFile, PoolError):
        return None  # a missing, stale, truncated or planted cache is rebuilt


def _line_index(all_hashes: np.ndarray, lines_per_doc: list) -> tuple[np.ndarray, np.ndarray]:
    """(line hashes sorted, the slice document of each): empty when the pools do not record lines per state
    (built before they did: `runbook reindex` adds it)."""
    if None in lines_per_doc or sum(lines_per_doc) != len(all_hashes):
        return np.zeros(0, dtype="<u8"), np.zeros(0, dtype=np.uint32)
    doc_of = np.repeat(np.arange(len(lines_per_doc), dtype=np.uint32), np.asarray(lines_per_doc, dtype=np.int64))
    order = np.argsort(all_hashes, kind="stable")
    return all_hashes[order], doc_of[order]
