"""The pools on disk, under the store's `pools/` folder: append-only files plus a manifest that says how much of
each file is committed. Inserting a trajectory appends; nothing is rewritten, so updates stay incremental.

    pools/manifest.json           committed sizes, each trajectory's generation, a change stamp
    pools/terms.txt               the vocabulary, one raw token per line (ids are line numbers)
    pools/lines.bin               uint64 hashes of each state's distinct content lines (boilerplate counts)
    pools/<pool>/docs.jsonl       one JSON object per document: provenance (and the text of events and notes)
    pools/<pool>/<field>.post     postings (doc uint32, term uint32, tf uint16) of one indexed field
    pools/cache/                  BM25 matrices built from the postings, keyed by the manifest stamp
"""
from __future__ import annotations

import os
import shutil
from collections import Counter
from pathlib import Path
from typing import BinaryIO

import numpy as np
import orjson

from ..errors import StoreError, UnsafeStoreFile
from ..store.layout import Layout
from .pools import PoolDoc, TrajectoryDocs
from .text import tokenize

FORMAT = 1
MANIFEST = "manifest.json"
TERMS = "terms.txt"
LINES = "lines.bin"
CACHE = "cache"
POOL_FIELDS = {"slices": ("page", "context"), "events": ("event",), "notes": ("note",)}
POSTING = np.dtype([("doc", "<u4"), ("term", "<u4"), ("tf", "<u2")])


def empty_manifest() -> dict:
    return {"format": FORMAT, "stamp": 0, "terms": 0, "terms_bytes": 0, "lines": 0, "trajectories": {},
            "pools": {name: {"docs": 0, "docs_bytes": 0, "fields": {f: 0 for f in fields}}
                      for name, fields in POOL_FIELDS.items()}}


def read_manifest(root: Path, read_bytes=None) -> dict:
    """The committed manifest, or an empty one when the pools were never built (`read_bytes`: how to read it)."""
    path = Path(root) / MANIFEST
    try:
        manifest = orjson.loads(read_bytes(path) if read_bytes else path.read_bytes())
    except FileNotFoundError:
        return empty_manifest()
    if manifest.get("format") != FORMAT:
        raise StoreError(f"{path}: pool format {manifest.get('format')} is not this runbook's ({FORMAT}); "
                         "run `runbook reindex` to rebuild the pools")
    return manifest


class PoolWriter:
    """Appends trajectories' pool documents; call under the store's write lock, `commit()` to make them visible."""

    def __init__(self, root: str | os.PathLike, *, fresh: bool = False):
        self.root = Path(root)
        if fresh and self.root.exists():
            shutil.rmtree(self.root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.manifest = read_manifest(self.root)
        self._truncate_to_manifest()
        self.vocab = {t: i for i, t in enumerate(self._read_terms())}
        self._new_terms: list[str] = []
        self._buffers: dict[str, list] = {}

    def _read_terms(self) -> list[str]:
        path = self.root / TERMS
        if not path.exists():
            return []
        return path.read_bytes()[: self.manifest["terms_bytes"]].decode("utf-8").split("\n")[:-1]

    def _truncate_to_manifest(self) -> None:
        """Drop whatever a killed writer appended after the last commit."""
        m = self.manifest
        _truncate(self.root / TERMS, m["terms_bytes"])
        _truncate(self.root / LINES, m["lines"] * 8)
        for name, pool in m["pools"].items():
            _truncate(self.root / name / "docs.jsonl", pool["docs_bytes"])
            for field, count in pool["fields"].items():
                _truncate(self.root / name / f"{field}.post", count * POSTING.itemsize)

    def add(self, docs: TrajectoryDocs) -> None:
        """Append one trajectory's documents; a trajectory already present is superseded (a new generation)."""
        gens = self.manifest["trajectories"]
        gen = gens.get(docs.trajectory_id, -1) + 1
        gens[docs.trajectory_id] = gen
        for name in POOL_FIELDS:
            self._append_docs(name, getattr(docs, name), gen)
        self._append_raw(LINES, np.asarray(docs.line_hashes, dtype="<u8").tobytes())
        self.manifest["lines"] += len(docs.line_hashes)

    def _append_docs(self, name: str, docs: list[PoolDoc], gen: int) -> None:
        if not docs:
            return
        pool = self.manifest["pools"][name]
        first = pool["docs"]
        lines = b"".join(orjson.dumps(dict(doc.meta, g=gen)) + b"\n" for doc in docs)
        for field in POOL_FIELDS[name]:
            rows = []
            for offset, doc in enumerate(docs):
                counts = doc.counts.get(field) if doc.counts is not None else None
                if counts is None:
                    counts = Counter(tokenize(doc.fields.get(field, "")))
                if counts:
                    ids = np.array(self._term_ids(counts), dtype="<u4")
                    block = np.empty(len(counts), dtype=POSTING)
                    block["doc"], block["term"] = first + offset, ids
                    block["tf"] = np.minimum(np.fromiter(counts.values(), dtype=np.int64, count=len(counts)), 65535)
                    rows.append(block)
            if rows:
                data = np.concatenate(rows)
                self._append_raw(f"{name}/{field}.post", data.tobytes())
                pool["fields"][field] += len(data)
        self._append_raw(f"{name}/docs.jsonl", lines)
        pool["docs"] += len(docs)
        pool["docs_bytes"] += len(lines)

    def _term_ids(self, terms) -> list[int]:
        """Ids of `terms`, new ones added to the vocabulary (the hot loop of an insert: kept to plain dict calls)."""
        get = self.vocab.get
        ids = [get(term) for term in terms]
        if None in ids:
            for pos, term in enumerate(terms):
                if ids[pos] is None:
                    ids[pos] = self.vocab.get(term)
                    if ids[pos] is None:
                        ids[pos] = self.vocab[term] = len(self.vocab)
                        self._new_terms.append(term)
        return ids

    def _append_raw(self, rel: str, data: bytes) -> None:
        self._buffers.setdefault(rel, []).append(data)

    def commit(self) -> None:
        """Write the appended bytes, then the manifest (atomically): readers never see a half-added trajectory."""
        if self._new_terms:
            data = "".join(t + "\n" for t in self._new_terms).encode("utf-8")
            self._buffers.setdefault(TERMS, []).append(data)
            self.manifest["terms"] += len(self._new_terms)
            self.manifest["terms_bytes"] += len(data)
            self._new_terms = []
        if not self._buffers:
            return
        for rel, chunks in self._buffers.items():
            path = self.root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "ab") as fh:
                for chunk in chunks:
                    fh.write(chunk)
        self._buffers = {}
        self.manifest["stamp"] += 1
        tmp = self.root / f"{MANIFEST}.tmp{os.getpid()}"
        tmp.write_bytes(orjson.dumps(self.manifest))
        os.replace(tmp, self.root / MANIFEST)


def _truncate(path: Path, size: int) -> None:
    if path.exists() and path.stat().st_size > size:
        with open(path, "r+b") as fh:
            fh.truncate(size)


class PoolSnapshot:
    """A consistent read of the committed pools: documents, postings and vocabulary up to the manifest's sizes.

    Every file is read through the store's layout, so a link planted among the pools is refused, not followed."""

    def __init__(self, layout: Layout):
        self.layout = layout
        self.root = layout.pools
        self.manifest = read_manifest(self.root, self.read_bytes)
        self.stamp = self.manifest["stamp"]
        self._docs: dict[str, list[dict]] = {}
        self._terms: list[str] | None = None

    def open(self, path: Path) -> BinaryIO:
        """A pool file opened for reading; UnsafeStoreFile (saying to reindex) for a planted link."""
        try:
            return self.layout.open(path)
        except UnsafeStoreFile as exc:
            raise UnsafeStoreFile(f"{exc}; run `runbook reindex` to rebuild the pools") from exc

    def read_bytes(self, path: Path, size: int | None = None) -> bytes:
        with self.open(path) as fh:
            return fh.read() if size is None else fh.read(size)

    def _array(self, path: Path, dtype, count: int) -> np.ndarray:
        with self.open(path) as fh:
            return np.fromfile(fh, dtype=dtype, count=count)

    @property
    def empty(self) -> bool:
        return not self.manifest["trajectories"]

    def docs(self, pool: str) -> list[dict]:
        """The pool's document records (dead generations included: see `live`)."""
        if pool not in self._docs:
            meta = self.manifest["pools"][pool]
            path = self.root / pool / "docs.jsonl"
            raw = self.read_bytes(path, meta["docs_bytes"]) if meta["docs"] else b""
            self._docs[pool] = [orjson.loads(line) for line in raw.splitlines()]
        return self._docs[pool]

    def live(self, pool: str) -> np.ndarray:
        """True for the documents of each trajectory's current generation."""
        gens = self.manifest["trajectories"]
        return np.fromiter((gens.get(d["t"]) == d["g"] for d in self.docs(pool)), dtype=bool,
                           count=len(self.docs(pool)))

    def postings(self, pool: str, field: str) -> np.ndarray:
        count = self.manifest["pools"][pool]["fields"].get(field, 0)
        path = self.root / pool / f"{field}.post"
        if not count:
            return np.empty(0, dtype=POSTING)
        return self._array(path, POSTING, count)

    def terms(self) -> list[str]:
        if self._terms is None:
            path = self.root / TERMS
            raw = self.read_bytes(path, self.manifest["terms_bytes"]) if self.manifest["terms_bytes"] else b""
            self._terms = raw.decode("utf-8").split("\n")[:-1]
        return self._terms

    def line_hashes(self) -> np.ndarray:
        path = self.root / LINES
        return self._array(path, "<u8", self.manifest["lines"]) if self.manifest["lines"] else \
            np.empty(0, dtype="<u8")

    @property
    def cache_dir(self) -> Path:
        return self.root / CACHE
