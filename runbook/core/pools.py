"""Reading method R's pools (the store's `pools/` folder): one consistent snapshot of what the manifest committed.

    pools/manifest.json           committed sizes, each trajectory's generation, a change stamp
    pools/terms.txt               the vocabulary, one raw token per line (ids are line numbers)
    pools/lines.bin               uint64 hashes of each state's distinct block texts (boilerplate counts, sightings)
    pools/<pool>/docs.jsonl       one JSON object per document: provenance (and the text of events and notes)
    pools/slices/pages.jsonl      one page record per slice document: the state's header and its blocks (core.page)
    pools/slices/pages.idx        uint64 end offset of each page record (a record is read without the others)
    pools/<pool>/<field>.post     postings (doc uint32, term uint32, tf uint16) of one indexed field
    pools/cache/                  BM25 indexes and line counts built from the postings, in segments of documents
                                  (core.segments)

The host writes the pools (runbook.pools.storage); this module reads them, on the host and inside the query
sandbox alike. Documents are parsed on demand, so a query that looks at a few hundred of them pays for those only.
"""

from __future__ import annotations

import json
import os
import re
import sys
from array import array
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, cast

if TYPE_CHECKING:
    import numpy as np

from .blocks import Page, read_page_record
from .errors import PoolError
from .files import open_regular

_loads: Callable[[bytes], Any]
try:  # faster where installed (the host); the sandbox has the standard library's json
    from orjson import loads as _loads
except ImportError:  # pragma: no cover - depends on the environment
    _loads = json.loads

FORMAT = 3
"""2: pages parsed into blocks at insert (slices/pages.*), line counts over block texts. 3: what each page said back
to an action (messages) in slices, events and notes; a slice keeps the reply to its own action."""
MANIFEST = "manifest.json"
TERMS = "terms.txt"
LINES = "lines.bin"
CACHE = "cache"
POOL_FIELDS = {"slices": ("page", "context"), "events": ("event",), "notes": ("note",)}
POSTING_FIELDS = [("doc", "<u4"), ("term", "<u4"), ("tf", "<u2")]
"""One posting of a field's index: a document, a term, the term's count in it (numpy's `POSTING` dtype)."""
PAGES = "slices/pages.jsonl"
PAGES_INDEX = "slices/pages.idx"


UNDO = "undo"
"""In the manifest: the way back to the manifest of the commit before ("counts": its sizes and stamp;
"generations": each trajectory this commit added and the generation it had before, null when new) and the
catalog fingerprint of each trajectory it added ("fingerprints"). A writer commits a trajectory's pools just before
its catalog rows; killed in between, it leaves pools one commit ahead of the catalog, which the store's recovery
finds (a fingerprint the catalog does not hold) and undoes with this record."""


CUTS = "cuts"
"""In the manifest: each commit that took documents back (a writer's rollback, recovery's undo) as {"stamp": the
stamp it made, "docs": {pool: the documents it left}}. Document numbers past a cut are given again to other
documents, so a cached segment built before the cut over documents past it is stale (core.segments)."""
BORN = "born"
"""In the manifest: the stamp a pools folder started from (0 for a new store's; a reindex's folder starts from the
last stamp of the one it replaces, and stamps only grow), so that a cached segment is never read in another folder,
whose documents have the same numbers: a reader still on the old folder may write one into the new folder's cache."""


def with_cut(manifest: dict, stamp: int) -> dict:
    """`manifest`, which takes documents back, with the new `stamp` and the cut recorded (see CUTS)."""
    cut = {"stamp": stamp, "docs": {name: pool["docs"] for name, pool in manifest["pools"].items()}}
    return dict(manifest, stamp=stamp, cuts=[*manifest.get(CUTS, []), cut])


def undo_fingerprints(manifest: dict) -> dict[str, str]:
    """trajectory id -> the fingerprint of the version the manifest's last commit added (empty when unrecorded)."""
    undo = manifest.get(UNDO)
    return dict(undo.get("fingerprints") or {}) if isinstance(undo, dict) else {}


def manifest_before(manifest: dict) -> dict | None:
    """The manifest as it was before its last commit (with a newer stamp, so that caches of the undone commit
    are stale), or None when the manifest records no way back."""
    undo = manifest.get(UNDO)
    if not isinstance(undo, dict) or not isinstance(undo.get("counts"), dict):
        return None
    trajectories = dict(manifest.get("trajectories") or {})
    for trajectory_id, generation in (undo.get("generations") or {}).items():
        if generation is None:
            trajectories.pop(trajectory_id, None)
        else:
            trajectories[trajectory_id] = generation
    before = {**undo["counts"], "format": manifest.get("format", FORMAT), "trajectories": trajectories}
    if manifest.get(BORN):
        before[BORN] = manifest[BORN]
    return with_cut(dict(before, cuts=manifest.get(CUTS, [])), int(manifest.get("stamp", 0)) + 1)


def empty_manifest() -> dict:
    return {
        "format": FORMAT,
        BORN: 0,
        "stamp": 0,
        "terms": 0,
        "terms_bytes": 0,
        "lines": 0,
        "pages": 0,
        "pages_bytes": 0,
        "trajectories": {},
        "pools": {
            name: {"docs": 0, "docs_bytes": 0, "fields": {f: 0 for f in fields}} for name, fields in POOL_FIELDS.items()
        },
    }


Opener = Callable[[Path], BinaryIO]
"""How a pool file is opened for reading: plain `open` in the sandbox; on the host, through the store's layout,
which refuses links planted in the store (raising PoolError)."""


def _open(path: Path) -> BinaryIO:
    return cast(BinaryIO, open_regular(path, "rb"))


def read_manifest(root: str | os.PathLike, opener: Opener = _open) -> dict:
    """The committed manifest, or an empty one when the pools were never built."""
    path = Path(root) / MANIFEST
    try:
        with opener(path) as fh:
            manifest = _loads(fh.read())
    except FileNotFoundError:
        return empty_manifest()
    if manifest.get("format") != FORMAT:
        raise PoolError(
            f"{path}: pool format {manifest.get('format')} is not this runbook's ({FORMAT}); "
            "run `runbook reindex` to rebuild the pools"
        )
    return manifest


def __getattr__(name: str) -> Any:
    """`POSTING`, numpy's dtype of a posting, made when first asked for: the sandbox's programs that read no
    postings (`rbplan`, `search`, `show`) do not pay numpy's import (0.15-0.3 s of a call)."""
    if name == "POSTING":
        return _posting()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _posting() -> np.dtype:
    import numpy

    globals()["POSTING"] = dtype = numpy.dtype(POSTING_FIELDS)
    return dtype


def _line_bounds(raw: bytes) -> tuple[Sequence[int], Sequence[int]]:
    """(starts, ends) of the lines of `raw`: by numpy when it is loaded already (the host, R), else by a scan."""
    if sys.modules.get("numpy") is not None:
        import numpy

        ends = numpy.flatnonzero(numpy.frombuffer(raw, dtype=numpy.uint8) == 10)
        starts = numpy.concatenate(([0], ends[:-1] + 1)) if len(ends) else numpy.zeros(0, dtype=numpy.int64)
        return cast(Sequence[int], starts), cast(Sequence[int], ends)
    ends_list = [m.start() for m in re.finditer(b"\n", raw)]
    return [0, *(end + 1 for end in ends_list[:-1])] if ends_list else [], ends_list


def _u64s(raw: bytes) -> Sequence[int]:
    """Little-endian unsigned 64-bit numbers (the page index), without numpy."""
    numbers = array("Q")
    numbers.frombytes(raw)
    if sys.byteorder != "little":
        numbers.byteswap()
    return numbers


PARSED_KEPT = 50_000
"""Parsed documents a pool keeps for the next query (a query reads a few thousand at most)."""


class Docs:
    """A pool's document records, indexable like a list; each JSON line is parsed the first time it is asked for."""

    def __init__(self, raw: bytes):
        self._raw = raw
        self._starts, self._ends = _line_bounds(raw)
        self._parsed: dict[int, dict] = {}

    def __len__(self) -> int:
        return len(self._ends)

    def __getitem__(self, n: int) -> dict:
        n = n + len(self) if n < 0 else n
        doc = self._parsed.get(n)
        if doc is None:
            if len(self._parsed) >= PARSED_KEPT:  # a long-lived server's queries would keep every document
                self._parsed.clear()
            doc = self._parsed[n] = self.read(n)
        return doc

    def __iter__(self) -> Iterator[dict]:
        """Every document, parsed one at a time and not kept (see `read`)."""
        return (self.read(n) for n in range(len(self)))

    def read(self, n: int) -> dict:
        """Document `n` parsed, not kept: for a pass over every document (kept, 179,277 slice documents held
        0.3 GB for as long as the pools stayed open)."""
        doc = self._parsed.get(n)
        if doc is not None:
            return doc
        if n < 0:
            n += len(self)
        return _loads(self._raw[int(self._starts[n]) : int(self._ends[n])])


class PoolSnapshot:
    """A consistent read of the committed pools: documents, postings and vocabulary up to the manifest's sizes.

    The files are opened when the snapshot is made and read through those handles, so one snapshot reads one
    generation whatever a writer does meanwhile: appends lie past the manifest's sizes, and a pools folder swapped
    by `reindex` (or removed) leaves the opened files as they were. A server's query that started on one stamp
    finishes on it."""

    def __init__(self, root: str | os.PathLike, opener: Opener = _open):
        self.root = Path(root)
        self.open = opener
        for _ in range(5):
            folder = _identity(self.root)
            self.manifest = read_manifest(self.root, opener)
            self._files = self._open_files()
            if _identity(self.root) == folder:
                break  # the manifest and the files are of one folder (not one half before a swap, half after)
            self.close()
        self.stamp = self.manifest["stamp"]
        self._docs: dict[str, Docs] = {}
        self._terms: list[str] | None = None
        self._page_ends: Sequence[int] | None = None

    def _open_files(self) -> dict[str, BinaryIO]:
        """The data files the manifest commits bytes of, opened now."""
        m = self.manifest
        wanted = [rel for rel, size in ((TERMS, m["terms_bytes"]), (LINES, m["lines"]), (PAGES, m["pages"])) if size]
        if m.get("pages"):
            wanted.append(PAGES_INDEX)
        for pool, meta in m["pools"].items():
            if meta["docs"]:
                wanted.append(f"{pool}/docs.jsonl")
            wanted += [f"{pool}/{field}.post" for field, count in meta["fields"].items() if count]
        files: dict[str, BinaryIO] = {}
        try:
            for rel in wanted:
                try:
                    files[rel] = self.open(self.root / rel)
                except FileNotFoundError:
                    continue  # said when it is read (PoolError: reindex)
        except BaseException:
            for fh in files.values():
                fh.close()
            raise
        return files

    def close(self) -> None:
        for fh in self._files.values():
            fh.close()
        self._files = {}

    def _read(self, rel: str, size: int, offset: int = 0) -> bytes:
        """`size` committed bytes of a data file from `offset`, through the handle opened with the manifest."""
        fh = self._files.get(rel)
        if fh is None:
            raise PoolError(
                f"{self.root / rel}: the manifest commits bytes of it, but it was not there when the "
                "pools were opened; run `runbook reindex` to rebuild the pools"
            )
        chunks, done = [], 0
        while done < size:
            chunk = os.pread(fh.fileno(), size - done, offset + done)  # no shared file position between threads
            if not chunk:
                raise PoolError(f"{self.root / rel} is shorter than its manifest says; run `runbook reindex`")
            chunks.append(chunk)
            done += len(chunk)
        return b"".join(chunks)

    @property
    def empty(self) -> bool:
        return not self.manifest["trajectories"]

    def state_docs(self) -> dict[tuple[str, int], int]:
        """{(trajectory id, state index): slice document} for each trajectory's current generation (reads every
        slice document, keeping none parsed)."""
        gens = self.manifest["trajectories"]
        return {(d["t"], d["i"]): n for n, d in enumerate(self.docs("slices")) if gens.get(d["t"]) == d.get("g")}

    def docs(self, pool: str) -> Docs:
        """The pool's document records (dead generations included: see `live`)."""
        if pool not in self._docs:
            meta = self.manifest["pools"][pool]
            raw = self._read(f"{pool}/docs.jsonl", meta["docs_bytes"]) if meta["docs"] else b""
            self._docs[pool] = Docs(raw)
        return self._docs[pool]

    def live(self, pool: str) -> np.ndarray:
        """True for the documents of each trajectory's current generation (reads every document; an index reads it
        from its segments' tables instead, core.segments.DocTable.live)."""
        import numpy as np

        gens = self.manifest["trajectories"]
        docs = self.docs(pool)
        return np.fromiter((gens.get(d["t"]) == d["g"] for d in docs), dtype=bool, count=len(docs))

    def postings(self, pool: str, field: str, start: int = 0, stop: int | None = None) -> np.ndarray:
        """The field's postings `start` to `stop` (all committed ones by default), in document order."""
        import numpy as np

        posting = _posting()
        count = self.manifest["pools"][pool]["fields"].get(field, 0)
        stop = count if stop is None else stop
        if not 0 <= start <= stop <= count:
            raise PoolError(f"postings {start}-{stop} of {pool}/{field}: only {count} are committed")
        if stop == start:
            return np.empty(0, dtype=posting)
        size = posting.itemsize
        return np.frombuffer(self._read(f"{pool}/{field}.post", (stop - start) * size, start * size), dtype=posting)

    def doc_records(self, pool: str, start: int, stop: int, block: int = 1 << 23) -> Iterator[dict]:
        """The pool's documents whose JSON lines lie in bytes `start` to `stop` of docs.jsonl, parsed one at a time
        and read a block at a time (a pass over 179,277 event documents held all 315 MB of them)."""
        rel = f"{pool}/docs.jsonl"
        if not 0 <= start <= stop <= self.manifest["pools"][pool]["docs_bytes"]:
            raise PoolError(f"bytes {start}-{stop} of {self.root / rel} are not all committed")
        rest = b""
        while start < stop:
            raw = rest + self._read(rel, min(block, stop - start), start)
            start += len(raw) - len(rest)
            cut = raw.rfind(b"\n") + 1 if start < stop else len(raw)
            rest = raw[cut:]
            for line in raw[:cut].split(b"\n"):
                if line:
                    yield _loads(line)

    def doc_byte(self, pool: str, offset: int) -> bytes:
        """The byte of docs.jsonl at `offset` (b"" past the committed ones): where a document's line starts."""
        size = self.manifest["pools"][pool]["docs_bytes"]
        return self._read(f"{pool}/docs.jsonl", 1, offset) if 0 <= offset < size else b""

    def terms(self) -> list[str]:
        if self._terms is None:
            raw = self._read(TERMS, self.manifest["terms_bytes"]) if self.manifest["terms_bytes"] else b""
            self._terms = raw.decode("utf-8").split("\n")[:-1]
        return self._terms

    def page(self, doc: int) -> tuple[dict[str, str], Page]:
        """(header, page) of slice document `doc`, parsed at insert; PoolError when the pools hold no page for it."""
        if self._page_ends is None:
            count = self.manifest.get("pages", 0)
            self._page_ends = _u64s(self._read(PAGES_INDEX, count * 8)) if count else []
        ends = self._page_ends
        if not 0 <= doc < len(ends):
            raise PoolError(f"no page record for slice {doc}: run `runbook reindex` to rebuild the pools")
        start = int(ends[doc - 1]) if doc else 0
        return read_page_record(self._read(PAGES, int(ends[doc]) - start, start))

    def line_hashes(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """The line hashes `start` to `stop` (all committed ones by default), in document order."""
        import numpy as np

        count = self.manifest["lines"]
        stop = count if stop is None else stop
        if not 0 <= start <= stop <= count:
            raise PoolError(f"line hashes {start}-{stop}: only {count} are committed")
        if stop == start:
            return np.empty(0, dtype="<u8")
        return np.frombuffer(self._read(LINES, (stop - start) * 8, start * 8), dtype="<u8")

    def cuts(self) -> list[dict]:
        """The commits that took documents back (see CUTS)."""
        return list(self.manifest.get(CUTS) or [])

    @property
    def lineage(self) -> str:
        """Which pools folder this is, as cached segments' names say it: the stamp it started from (see BORN)."""
        return str(int(self.manifest.get(BORN) or 0))

    @property
    def cache_dir(self) -> Path:
        return self.root / CACHE

    def cache_names(self) -> list[str]:
        """The names of the files in the cache folder (none when it cannot be listed)."""
        try:
            return os.listdir(self.cache_dir)
        except OSError:
            return []


def _identity(folder: Path) -> tuple[int, int] | None:
    """(device, inode) of the pools folder itself: a `reindex` swaps in another."""
    try:
        st = os.lstat(folder)
    except OSError:
        return None
    return st.st_dev, st.st_ino
