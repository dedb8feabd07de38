"""The pools' caches in segments: each covers a run of a pool's documents and is built once, when they are committed.
New documents (numbered after every old one) make a new small segment at the end of an insert, and the segments are
merged as they add up, so that inserting a trajectory into a large store costs about what it inserted, not a
rebuild over the whole store (47 s and 2.6 GB for one trajectory into a billion tokens when every insert rebuilt
the indexes). What a replaced trajectory changes (which documents are live) is worked out when they are read.

    pools/cache/<group>-<lineage>-d<first>-<end>-s<stamp>.npz

<group> names what is cached and how (pool first, then version and settings: core.bm25 and core.boilerplate say),
<lineage> the pools folder (the stamp it started from, core.pools.BORN), documents <first> up to <end> (excluded),
built from the pools as they were at <stamp>. A reader uses a segment when its lineage is the snapshot's, it was
built at the snapshot's stamp or before, no commit since took back documents it covers (core.pools.CUTS), and it
starts where the one before it ended in every pool file (its bounds) and lies on the files' document boundaries
there. A missing, unreadable, truncated, stale or planted segment is not used: the documents from there to the end
are built again (and written, when the reader may write); a read-only reader (the sandbox) builds them in memory.
"""

from __future__ import annotations

import re
import zipfile
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

import numpy as np

from .files import load_arrays, save_atomic
from .pools import PoolError, PoolSnapshot

MERGE_FRACTION = 0.5
"""The segments after one are merged with it once they add up to this share of its size: from one segment to the
next the sizes fall by at least half, so a store holds about log2 of its size in segments. Simulated, 20,000 inserts
of 600 postings after a billion tokens' 57M: at most 9 segments (7 at the end), each posting written 13 times on
average, small segments often and the large one rarely (a fraction of 0.1 kept 3-5 segments, writing 37 times)."""
_NAME = re.compile(r"^(?P<group>.+)-(?P<lineage>[0-9a-z]+)-d(?P<first>\d+)-(?P<end>\d+)-s(?P<stamp>\d+)\.npz$")
_UNREADABLE = (OSError, KeyError, ValueError, TypeError, IndexError, EOFError, zipfile.BadZipFile, PoolError)

Bounds = tuple[int, ...]
"""Where a segment starts or ends in the pool's files: (document, byte of docs.jsonl, then the kind's own offsets:
each indexed field's posting, or the line hash)."""


def blob(texts: Sequence[str]) -> np.ndarray:
    """Texts without line breaks (stems, trajectory ids, sites) as one array of bytes."""
    return np.frombuffer("\n".join(texts).encode("utf-8"), dtype=np.uint8)


def unblob(data: np.ndarray, count: int) -> list[str]:
    """The `count` texts of a `blob` (ValueError when it holds another number)."""
    texts = bytes(data).decode("utf-8").split("\n") if count else []
    if len(texts) != count:
        raise ValueError(f"{len(texts)} texts where {count} were expected")
    return texts


@dataclass(frozen=True)
class DocTable:
    """Which trajectory, generation and site each document of a segment has: liveness is worked out from it when
    the segment is read, so a trajectory replaced later does not make the segment stale."""

    tids: list[str]
    """The distinct trajectories."""
    tix: np.ndarray
    """Per document, its trajectory's position in `tids`."""
    gen: np.ndarray
    """Per document, its generation."""
    sites: list[str]
    site: np.ndarray
    """Per document, its site's position in `sites`."""

    @classmethod
    def of(cls, records: Sequence[tuple]) -> DocTable:
        """From (trajectory, generation, site, ...) per document."""
        tids: dict[str, int] = {}
        sites: dict[str, int] = {}
        n = len(records)
        tix = np.fromiter((tids.setdefault(r[0], len(tids)) for r in records), dtype=np.uint32, count=n)
        gen = np.fromiter((r[1] for r in records), dtype=np.int64, count=n)
        site = np.fromiter((sites.setdefault(r[2], len(sites)) for r in records), dtype=np.uint32, count=n)
        return cls(list(tids), tix, gen, list(sites), site)

    @classmethod
    def joined(cls, tables: Sequence[DocTable]) -> DocTable:
        tids: dict[str, int] = {}
        sites: dict[str, int] = {}
        tix, site = [], []
        for table in tables:
            tix.append(_renumbered(table.tix, table.tids, tids))
            site.append(_renumbered(table.site, table.sites, sites))
        gen = np.concatenate([t.gen for t in tables])
        return cls(list(tids), np.concatenate(tix), gen, list(sites), np.concatenate(site))

    def __len__(self) -> int:
        return len(self.gen)

    def live(self, generations: dict[str, int]) -> np.ndarray:
        """True for the documents of each trajectory's current generation (core.pools.PoolSnapshot.live's rule)."""
        current = np.fromiter((generations.get(t, -1) for t in self.tids), dtype=np.int64, count=len(self.tids))
        return current[self.tix] == self.gen

    def site_counts(self, mask: np.ndarray) -> dict[str, int]:
        """{site: documents of it where `mask` is true}."""
        counts = np.bincount(self.site[mask], minlength=len(self.sites))
        return {s: int(c) for s, c in zip(self.sites, counts) if c}

    def arrays(self) -> dict[str, Any]:
        return {"tids": blob(self.tids), "tix": self.tix, "gen": self.gen, "sites": blob(self.sites), "site": self.site}

    @classmethod
    def read(cls, arrays: dict[str, Any], n_docs: int) -> DocTable:
        tix, gen, site = arrays["tix"], arrays["gen"], arrays["site"]
        if not len(tix) == len(gen) == len(site) == n_docs:
            raise ValueError("a document table of another length than its segment")
        tids = unblob(arrays["tids"], int(tix.max()) + 1 if n_docs else 0)
        sites = unblob(arrays["sites"], int(site.max()) + 1 if n_docs else 0)
        return cls(tids, tix, gen, sites, site)


def _renumbered(positions: np.ndarray, names: list[str], into: dict[str, int]) -> np.ndarray:
    """`positions` into `names`, as positions into the growing numbering `into`."""
    new = np.fromiter((into.setdefault(n, len(into)) for n in names), dtype=np.uint32, count=len(names))
    return new[positions] if len(names) else positions


@dataclass
class Segment:
    """What every segment holds: its bounds, the stamp it was built at, and its documents' table."""

    start: Bounds
    end: Bounds
    stamp: int
    table: DocTable

    @property
    def size(self) -> int:
        """What merging the segment costs, about (the merge rule compares these)."""
        return self.end[0] - self.start[0]

    def arrays(self) -> dict[str, Any]:
        """Everything written to its file (the kind's own arrays added)."""
        bounds = {"start": np.asarray(self.start, dtype=np.int64), "end": np.asarray(self.end, dtype=np.int64)}
        return {**bounds, "stamp": np.int64(self.stamp), **self.table.arrays()}


S = TypeVar("S", bound=Segment)


class Kind(ABC, Generic[S]):
    """One kind of cache over one pool (an index with its field weights, the line counts): how its segments are
    built from the pool files, merged, and read back."""

    group: str
    """The files' name up to the lineage: what is cached, its version and settings."""
    pool: str

    @abstractmethod
    def end(self, snapshot: PoolSnapshot) -> Bounds:
        """The bounds of everything the snapshot commits."""

    @abstractmethod
    def build(self, snapshot: PoolSnapshot, start: Bounds, end: Bounds, table: DocTable, nl: Sequence[int | None]) -> S:
        """The segment of the documents from `start` to `end` as of the snapshot: `table` is theirs, `nl` the
        number of line hashes each has (None where the pools do not record it)."""

    @abstractmethod
    def merge(self, parts: Sequence[S], stamp: int) -> S:
        """One segment holding what consecutive `parts` hold."""

    @abstractmethod
    def read(self, arrays: dict[str, Any], start: Bounds, end: Bounds, stamp: int, table: DocTable) -> S:
        """The segment in a file's arrays (KeyError or ValueError when they are not one)."""

    def aligned(self, snapshot: PoolSnapshot, start: Bounds, end: Bounds) -> bool:
        """Whether the bounds fall on document boundaries of the pool files (the kind adds its own files')."""
        first, stop = start[1], end[1]
        if stop - first <= 0:
            return stop == first and end[0] == start[0]
        starts = first == 0 or snapshot.doc_byte(self.pool, first - 1) == b"\n"
        return starts and snapshot.doc_byte(self.pool, stop - 1) == b"\n"

    def file_name(self, snapshot: PoolSnapshot, segment: Segment) -> str:
        return f"{self.group}-{snapshot.lineage}-d{segment.start[0]}-{segment.end[0]}-s{segment.stamp}.npz"


def load_segments(snapshot: PoolSnapshot, kind: Kind[S], *, write: bool) -> list[S]:
    """The segments covering every document the snapshot commits, in order: those cached, then one built for the
    documents after them; when `write`, the one built is saved and the segments merged by the rule above."""
    end = kind.end(snapshot)
    found = _cached(snapshot, kind, end)
    saved = True
    start = found[-1].end if found else tuple(0 for _ in end)
    if start[0] < end[0]:
        found.append(build_range(snapshot, kind, start, end))
        saved = write and save(snapshot, kind, found[-1])
    if write and saved:
        found = _merged(snapshot, kind, found)
    return found


def build_range(snapshot: PoolSnapshot, kind: Kind[S], start: Bounds, end: Bounds) -> S:
    """One segment of the documents from `start` to `end`."""
    records = [
        (doc["t"], doc["g"], doc.get("s") or "", doc.get("nl"))
        for doc in snapshot.doc_records(kind.pool, start[1], end[1])
    ]
    if len(records) != end[0] - start[0]:
        raise PoolError(f"{snapshot.root}: the {kind.pool} documents are out of step; run `runbook reindex`")
    return kind.build(snapshot, start, end, DocTable.of(records), [r[3] for r in records])


def save(snapshot: PoolSnapshot, kind: Kind, segment: Segment) -> bool:
    """Write the segment's file (atomically); False when the store cannot be written."""
    return save_atomic(snapshot.cache_dir / kind.file_name(snapshot, segment), **segment.arrays())


@dataclass(frozen=True)
class _Name:
    name: str
    first: int
    end: int
    stamp: int


def _names(snapshot: PoolSnapshot, kind: Kind, n_docs: int) -> dict[int, list[_Name]]:
    """The usable files by their first document, the longest (then the newest) first."""
    found: dict[int, list[_Name]] = {}
    for name in snapshot.cache_names():
        parsed = _parse(name)
        if parsed is None or parsed[0] != kind.group or parsed[1] != snapshot.lineage:
            continue
        entry = _Name(name, *parsed[2:])
        if entry.first < entry.end <= n_docs and _current(snapshot, kind.group, entry.end, entry.stamp):
            found.setdefault(entry.first, []).append(entry)
    for entries in found.values():
        entries.sort(key=lambda e: (-e.end, -e.stamp))
    return found


def _parse(name: str) -> tuple[str, str, int, int, int] | None:
    """(group, lineage, first, end, stamp) of a segment's file name, None for another name."""
    m = _NAME.match(name)
    if m is None:
        return None
    return m["group"], m["lineage"], int(m["first"]), int(m["end"]), int(m["stamp"])


def _cached(snapshot: PoolSnapshot, kind: Kind[S], end: Bounds) -> list[S]:
    """The longest run of usable cached segments from the first document on."""
    found: list[S] = []
    for _ in range(3):
        names, vanished, found = _names(snapshot, kind, end[0]), False, []
        at: Bounds = tuple(0 for _ in end)
        while at[0] < end[0]:
            segment = None
            for entry in names.get(at[0], []):
                try:
                    segment = _read(snapshot, kind, entry, at, end)
                except FileNotFoundError:  # a writer merged it into another and removed it since the listing
                    vanished = True
                if segment is not None:
                    break
            if segment is None:
                break
            found.append(segment)
            at = segment.end
        if at[0] == end[0] or not vanished:
            break
    return found


def _read(snapshot: PoolSnapshot, kind: Kind[S], entry: _Name, at: Bounds, end: Bounds) -> S | None:
    """The segment of the file `entry` when it starts at `at` and is usable, else None."""
    try:
        with snapshot.open(snapshot.cache_dir / entry.name) as fh:
            arrays = load_arrays(fh)
        start = tuple(int(n) for n in arrays["start"])
        stop = tuple(int(n) for n in arrays["end"])
        if start != at or len(stop) != len(end) or stop[0] != entry.end or int(arrays["stamp"]) != entry.stamp:
            return None
        if any(s > e for s, e in zip(stop, end)) or any(a > s for a, s in zip(start, stop)):
            return None
        table = DocTable.read(arrays, entry.end - entry.first)
        segment = kind.read(arrays, start, stop, entry.stamp, table)
        return segment if kind.aligned(snapshot, start, stop) else None
    except FileNotFoundError:
        raise
    except _UNREADABLE:
        return None  # truncated, planted or of another layout: built again


def merge_point(sizes: Sequence[int]) -> int | None:
    """The first segment that the ones after it add up to MERGE_FRACTION of (merge it and them), or None."""
    after, point = 0, None
    for j in range(len(sizes) - 2, -1, -1):
        after += sizes[j + 1]
        if after >= MERGE_FRACTION * sizes[j]:
            point = j
    return point


def _merged(snapshot: PoolSnapshot, kind: Kind[S], segments: list[S]) -> list[S]:
    while (point := merge_point([s.size for s in segments])) is not None:
        segments = [*segments[:point], kind.merge(segments[point:], snapshot.stamp)]
        if not save(snapshot, kind, segments[-1]):
            break
    return segments


def stale_files(snapshot: PoolSnapshot, used: dict[str, set[str]]) -> list[Path]:
    """The cache files no reader of this stamp or a later one needs: another version's or layout's, another
    folder's, stale, or covered by another file of their group. `used`: {group: the files in use} of the groups
    just loaded (their other files go). Another thread's temporary file (a dot name) is left alone."""
    names = [n for n in snapshot.cache_names() if n.endswith(".npz") and n[:1] != "."]
    parsed = {n: _parse(n) for n in names}
    stale = []
    for name in names:
        p = parsed[name]
        if p is None or p[1] != snapshot.lineage:
            stale.append(name)
        elif p[0] in used:
            if name not in used[p[0]]:
                stale.append(name)
        elif _covered(snapshot, name, p, parsed):
            stale.append(name)
    return [snapshot.cache_dir / n for n in stale]


def _covered(snapshot: PoolSnapshot, name: str, p: tuple, parsed: dict) -> bool:
    """Whether a file of a group not loaded now is stale, or covered by another of its group (a larger range, or
    the same one built later)."""
    group, lineage, first, end, stamp = p
    if not _current(snapshot, group, end, stamp):
        return True
    for other, q in parsed.items():
        if q is None or other == name or q[:2] != (group, lineage) or not _current(snapshot, group, q[3], q[4]):
            continue
        if q[2] <= first and end <= q[3] and ((q[2], q[3]) != (first, end) or q[4] > stamp):
            return True
    return False


def _current(snapshot: PoolSnapshot, group: str, end: int, stamp: int) -> bool:
    """Whether a segment of `group` (named by its pool first) ending at `end`, built at `stamp`, may still be read."""
    pool = group.split("-", 1)[0]
    meta = snapshot.manifest["pools"].get(pool)
    if meta is None or end > meta["docs"] or stamp > snapshot.stamp:
        return False
    return not any(c["stamp"] > stamp and end > c["docs"].get(pool, 0) for c in snapshot.cuts())
