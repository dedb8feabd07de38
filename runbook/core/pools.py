"""Reading method R's pools (the store's `pools/` folder): one consistent snapshot of what the manifest committed.

    pools/manifest.json           committed sizes, each trajectory's generation, a change stamp
    pools/terms.txt               the vocabulary, one raw token per line (ids are line numbers)
    pools/lines.bin               uint64 hashes of each state's distinct block texts (boilerplate counts, sightings)
    pools/<pool>/docs.jsonl       one JSON object per document: provenance (and the text of events and notes)
    pools/slices/pages.jsonl      one page record per slice document: the state's header and its blocks (core.page)
    pools/slices/pages.idx        uint64 end offset of each page record (a record is read without the others)
    pools/<pool>/<field>.post     postings (doc uint32, term uint32, tf uint16) of one indexed field
    pools/cache/                  BM25 indexes and line counts built from the postings, for the manifest's stamp

The host writes the pools (runbook.pools.storage); this module reads them, on the host and inside the query
sandbox alike. Documents are parsed on demand, so a query that looks at a few hundred of them pays for those only.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from .blocks import Page, read_page_record

_loads: Callable[[bytes], Any]
try:  # faster where installed (the host); the sandbox has the standard library's json
    from orjson import loads as _loads
except ImportError:  # pragma: no cover - depends on the environment
    _loads = json.loads

FORMAT = 2
"""2: pages parsed into blocks at insert (slices/pages.*), line counts over block texts."""
MANIFEST = "manifest.json"
TERMS = "terms.txt"
LINES = "lines.bin"
CACHE = "cache"
POOL_FIELDS = {"slices": ("page", "context"), "events": ("event",), "notes": ("note",)}
POSTING = np.dtype([("doc", "<u4"), ("term", "<u4"), ("tf", "<u2")])
PAGES = "slices/pages.jsonl"
PAGES_INDEX = "slices/pages.idx"


class PoolError(Exception):
    """The pools cannot be read as they are; the message says what to run."""


def empty_manifest() -> dict:
    return {
        "format": FORMAT,
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
    return open(path, "rb")


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


class Docs:
    """A pool's document records, indexable like a list; each JSON line is parsed the first time it is asked for."""

    def __init__(self, raw: bytes):
        self._raw = raw
        ends = np.flatnonzero(np.frombuffer(raw, dtype=np.uint8) == 10)
        self._starts = np.concatenate(([0], ends[:-1] + 1)) if len(ends) else np.zeros(0, dtype=np.int64)
        self._ends = ends
        self._parsed: dict[int, dict] = {}

    def __len__(self) -> int:
        return len(self._ends)

    def __getitem__(self, n: int) -> dict:
        doc = self._parsed.get(n)
        if doc is None:
            if n < 0:
                n += len(self)
            doc = self._parsed[n] = _loads(self._raw[int(self._starts[n]) : int(self._ends[n])])
        return doc

    def __iter__(self):
        return (self[n] for n in range(len(self)))


class PoolSnapshot:
    """A consistent read of the committed pools: documents, postings and vocabulary up to the manifest's sizes."""

    def __init__(self, root: str | os.PathLike, opener: Opener = _open):
        self.root = Path(root)
        self.open = opener
        self.manifest = read_manifest(self.root, opener)
        self.stamp = self.manifest["stamp"]
        self._docs: dict[str, Docs] = {}
        self._terms: list[str] | None = None
        self._page_ends: np.ndarray | None = None

    @property
    def empty(self) -> bool:
        return not self.manifest["trajectories"]

    def docs(self, pool: str) -> Docs:
        """The pool's document records (dead generations included: see `live`)."""
        if pool not in self._docs:
            meta = self.manifest["pools"][pool]
            raw = b""
            if meta["docs"]:
                with self.open(self.root / pool / "docs.jsonl") as fh:
                    raw = fh.read(meta["docs_bytes"])
            self._docs[pool] = Docs(raw)
        return self._docs[pool]

    def live(self, pool: str) -> np.ndarray:
        """True for the documents of each trajectory's current generation (reads every document: the index build
        stores the result, see bm25.BM25Index.live)."""
        gens = self.manifest["trajectories"]
        docs = self.docs(pool)
        return np.fromiter((gens.get(d["t"]) == d["g"] for d in docs), dtype=bool, count=len(docs))

    def postings(self, pool: str, field: str) -> np.ndarray:
        count = self.manifest["pools"][pool]["fields"].get(field, 0)
        path = self.root / pool / f"{field}.post"
        if not count:
            return np.empty(0, dtype=POSTING)
        with self.open(path) as fh:
            return np.frombuffer(fh.read(count * POSTING.itemsize), dtype=POSTING)

    def terms(self) -> list[str]:
        if self._terms is None:
            raw = b""
            if self.manifest["terms_bytes"]:
                with self.open(self.root / TERMS) as fh:
                    raw = fh.read(self.manifest["terms_bytes"])
            self._terms = raw.decode("utf-8").split("\n")[:-1]
        return self._terms

    def page(self, doc: int) -> tuple[dict[str, str], Page]:
        """(header, page) of slice document `doc`, parsed at insert; PoolError when the pools hold no page for it."""
        if self._page_ends is None:
            count = self.manifest.get("pages", 0)
            ends = np.zeros(0, dtype="<u8")
            if count:
                with self.open(self.root / PAGES_INDEX) as fh:
                    ends = np.frombuffer(fh.read(count * 8), dtype="<u8")
            self._page_ends = ends
        ends = self._page_ends
        if not 0 <= doc < len(ends):
            raise PoolError(f"no page record for slice {doc}: run `runbook reindex` to rebuild the pools")
        start = int(ends[doc - 1]) if doc else 0
        with self.open(self.root / PAGES) as fh:
            fh.seek(start)
            return read_page_record(fh.read(int(ends[doc]) - start))

    def line_hashes(self) -> np.ndarray:
        if not self.manifest["lines"]:
            return np.empty(0, dtype="<u8")
        with self.open(self.root / LINES) as fh:
            return np.frombuffer(fh.read(self.manifest["lines"] * 8), dtype="<u8")

    @property
    def cache_dir(self) -> Path:
        return self.root / CACHE
