"""How many states show a given content line: lines on most pages of a site (menus, footers) are boilerplate."""
from __future__ import annotations

import os

import numpy as np

from ..errors import UnsafeStoreFile
from .storage import PoolSnapshot

MIN_STATES = 8
SHARE = 0.3
"""A line on at least this share of a site's states (and on MIN_STATES of them) is the site's furniture."""


class LineCounts:
    """Per-site distinct-line counts over all states, built from the pools' line hashes, cached per stamp."""

    def __init__(self, hashes: np.ndarray, counts: np.ndarray, site_states: dict[str, int]):
        self.hashes, self.counts, self.site_states = hashes, counts, site_states

    def threshold(self, site: str) -> int:
        return max(MIN_STATES, int(SHARE * self.site_states.get(site, 0)))

    def count(self, line_hashes: np.ndarray) -> np.ndarray:
        if not len(self.hashes):
            return np.zeros(len(line_hashes), dtype=np.int64)
        pos = np.searchsorted(self.hashes, line_hashes).clip(0, len(self.hashes) - 1)
        return np.where(self.hashes[pos] == line_hashes, self.counts[pos], 0)

    def is_boilerplate(self, line_hashes: np.ndarray, site: str) -> np.ndarray:
        return self.count(line_hashes) >= self.threshold(site)


def load_line_counts(snapshot: PoolSnapshot) -> LineCounts:
    live = snapshot.live("slices")
    site_states: dict[str, int] = {}
    for doc, alive in zip(snapshot.docs("slices"), live):
        if alive:
            site_states[doc.get("s") or ""] = site_states.get(doc.get("s") or "", 0) + 1
    path = snapshot.cache_dir / "lines.npz"
    try:
        with snapshot.open(path) as fh, np.load(fh) as data:
            if int(data["stamp"]) == snapshot.stamp:
                return LineCounts(data["hashes"], data["counts"], site_states)
    except (OSError, KeyError, ValueError, UnsafeStoreFile):  # a missing, stale or planted cache is rebuilt
        pass
    hashes, counts = np.unique(snapshot.line_hashes(), return_counts=True)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"lines.tmp{os.getpid()}.npz")
        np.savez(tmp, stamp=np.int64(snapshot.stamp), hashes=hashes, counts=counts.astype(np.int32))
        os.replace(tmp, path)
    except OSError:
        pass
    return LineCounts(hashes, counts, site_states)
