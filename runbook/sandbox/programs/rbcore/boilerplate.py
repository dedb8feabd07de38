"""How many states show a given content line: lines on most pages of a site (menus, footers) are boilerplate."""
from __future__ import annotations

import os

import numpy as np

from .pools import PoolSnapshot

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


def load_line_counts(snapshot: PoolSnapshot, *, write: bool = True) -> LineCounts:
    """The counts for this manifest stamp: from the cache when current, else built (and cached when `write`)."""
    path = snapshot.cache_dir / "lines.npz"
    try:
        with np.load(path) as data:
            if int(data["stamp"]) == snapshot.stamp:
                sites = bytes(data["sites"]).decode("utf-8").split("\n") if data["sites"].size else []
                return LineCounts(data["hashes"], data["counts"], dict(zip(sites, data["site_states"].tolist())))
    except (OSError, KeyError, ValueError):
        pass
    site_states: dict[str, int] = {}
    for doc, alive in zip(snapshot.docs("slices"), snapshot.live("slices")):
        if alive:
            site_states[doc.get("s") or ""] = site_states.get(doc.get("s") or "", 0) + 1
    hashes, counts = np.unique(snapshot.line_hashes(), return_counts=True)
    if write:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f"lines.tmp{os.getpid()}.npz")
            np.savez(tmp, stamp=np.int64(snapshot.stamp), hashes=hashes, counts=counts.astype(np.int32),
                     sites=np.frombuffer("\n".join(site_states).encode("utf-8"), dtype=np.uint8),
                     site_states=np.asarray(list(site_states.values()), dtype=np.int64))
            os.replace(tmp, path)
        except OSError:
            pass
    return LineCounts(hashes, counts, site_states)
