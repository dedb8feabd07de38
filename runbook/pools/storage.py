"""Writing the pools (the format is described, and read, in runbook.core.pools, shared with the query sandbox):
append-only files plus a manifest that says how much of each file is committed. Inserting a trajectory appends;
nothing is rewritten, so updates stay incremental.
"""

from __future__ import annotations

import os
import shutil
import weakref
from pathlib import Path
from typing import BinaryIO, cast

import numpy as np
import orjson

from ..core import pools as core
from ..core.pools import LINES, MANIFEST, PAGES, PAGES_INDEX, POOL_FIELDS, POSTING, TERMS, PoolSnapshot
from ..core.text import term_counts
from ..errors import StoreError, UnsafeStoreFile
from ..store.layout import Layout
from .documents import CountedField, PoolDoc, TrajectoryDocs

__all__ = ["PoolWriter", "PoolSnapshot", "open_snapshot", "read_manifest"]


def read_manifest(root: Path, opener: core.Opener | None = None) -> dict:
    """The committed manifest (empty when the pools were never built); StoreError when it cannot be used."""
    try:
        return core.read_manifest(root, *([opener] if opener else []))
    except core.PoolError as exc:
        raise store_error(exc) from exc


def safe_opener(layout: Layout) -> core.Opener:
    """Pool files opened through the store's layout: a link planted among them is refused (PoolError, which
    says to rebuild), not followed out of the store."""

    def opener(path: Path) -> BinaryIO:
        try:
            return layout.open(path)
        except UnsafeStoreFile as exc:
            raise core.PoolError(f"{exc}; run `runbook reindex` to rebuild the pools") from exc

    return opener


def open_snapshot(layout: Layout) -> PoolSnapshot:
    """A consistent read of the store's committed pools; StoreError when they cannot be used."""
    try:
        return PoolSnapshot(layout.pools, safe_opener(layout))
    except core.PoolError as exc:
        raise store_error(exc) from exc


def store_error(exc: core.PoolError) -> StoreError:
    """The host's error for pools that cannot be read: UnsafeStoreFile when a planted link was refused."""
    return (UnsafeStoreFile if isinstance(exc.__cause__, UnsafeStoreFile) else StoreError)(str(exc))


class PoolWriter:
    """Appends trajectories' pool documents; call under the store's write lock, `commit()` to make them visible.
    Every file is read and written through the store's layout: a link planted among the pools is refused
    (UnsafeStoreFile), never written through."""

    def __init__(self, layout: Layout, folder: str | os.PathLike | None = None, *, fresh: bool = False):
        self.layout = layout
        self.root = Path(folder) if folder is not None else layout.pools
        """The pools' folder: the store's, or a fresh one that reindex swaps in."""
        if fresh and (self.root.exists() or self.root.is_symlink()):
            _remove(self.root)
        self.manifest = read_manifest(self.root, safe_opener(layout))
        self.committed = _copied(self.manifest)
        """The manifest as last committed: what `rollback()` goes back to."""
        self._truncate_to_manifest()
        self.vocab = {t: i for i, t in enumerate(self._read_terms())}
        self._new_terms: list[str] = []
        self._buffers: dict[str, list] = {}
        self._fingerprints: dict[str, str] = {}
        """id -> catalog fingerprint of each trajectory added since the last commit (its undo record)."""
        self._appending: dict[str, int] = {}
        """rel -> the fd each pool file is appended through, opened (through the layout) at its first commit and
        kept: opening a dozen files folder by folder at every commit was a tenth of the writer process's work."""
        weakref.finalize(self, _close_all, self._appending)

    def _read_terms(self) -> list[str]:
        if not self.manifest["terms_bytes"]:
            return []
        with self.layout.open(self.root / TERMS) as fh:
            return fh.read(self.manifest["terms_bytes"]).decode("utf-8").split("\n")[:-1]

    def _truncate_to_manifest(self) -> None:
        """Drop whatever a killed writer appended after the last commit."""
        m = self.manifest
        truncate = self.layout.truncate
        truncate(self.root / TERMS, m["terms_bytes"])
        truncate(self.root / LINES, m["lines"] * 8)
        truncate(self.root / PAGES, m["pages_bytes"])
        truncate(self.root / PAGES_INDEX, m["pages"] * 8)
        for name, pool in m["pools"].items():
            truncate(self.root / name / "docs.jsonl", pool["docs_bytes"])
            for field, count in pool["fields"].items():
                truncate(self.root / name / f"{field}.post", count * POSTING.itemsize)

    def add(self, docs: TrajectoryDocs, fingerprint: str = "") -> None:
        """Append one trajectory's documents; a trajectory already present is superseded (a new generation).
        `fingerprint`: the version the catalog commits right after these pools (see core.pools.UNDO)."""
        self._fingerprints[docs.trajectory_id] = fingerprint
        gens = self.manifest["trajectories"]
        gen = gens.get(docs.trajectory_id, -1) + 1
        gens[docs.trajectory_id] = gen
        for name in POOL_FIELDS:
            self._append_docs(name, getattr(docs, name), gen, docs.counted)
        self._append_raw(LINES, np.asarray(docs.line_hashes, dtype="<u8").tobytes())
        self.manifest["lines"] += len(docs.line_hashes)
        self._append_pages(docs.pages)

    def _append_pages(self, pages: list[bytes]) -> None:
        """One record per slice document, in the slices' order; the index holds each record's end offset."""
        m = self.manifest
        if len(pages) != m["pools"]["slices"]["docs"] - m["pages"]:
            raise core.PoolError("page records out of step with the slices: run `runbook reindex`")
        ends, offset = [], m["pages_bytes"]
        for record in pages:
            offset += len(record) + 1
            ends.append(offset)
        self._append_raw(PAGES, b"".join(record + b"\n" for record in pages))
        self._append_raw(PAGES_INDEX, np.asarray(ends, dtype="<u8").tobytes())
        m["pages"] += len(pages)
        m["pages_bytes"] = offset

    def _append_docs(self, name: str, docs: list[PoolDoc], gen: int, counted: dict[str, CountedField]) -> None:
        if not docs:
            return
        pool = self.manifest["pools"][name]
        first = pool["docs"]
        lines = b"".join(orjson.dumps(dict(doc.meta, g=gen)) + b"\n" for doc in docs)
        for field in POOL_FIELDS[name]:
            terms = counted.get(f"{name}/{field}") or CountedField.of(
                [term_counts(d.fields.get(field, "")) for d in docs]
            )
            if terms.terms:
                ids = self._term_ids(terms.term_list())
                block = np.empty(len(ids), dtype=POSTING)
                block["doc"] = np.repeat(np.arange(first, first + len(docs), dtype=np.int64), terms.sizes)
                block["term"] = ids
                block["tf"] = np.minimum(terms.counts, 65535)
                self._append_raw(f"{name}/{field}.post", block.tobytes())
                pool["fields"][field] += len(block)
        self._append_raw(f"{name}/docs.jsonl", lines)
        pool["docs"] += len(docs)
        pool["docs_bytes"] += len(lines)

    def _term_ids(self, terms) -> list[int]:
        """Ids of `terms`, new ones added to the vocabulary (the hot loop of an insert: kept to plain dict calls)."""
        get = self.vocab.get
        ids = list(map(get, terms))
        if None in ids:
            for pos, term in enumerate(terms):
                if ids[pos] is None:
                    ids[pos] = self.vocab.get(term)
                    if ids[pos] is None:
                        ids[pos] = self.vocab[term] = len(self.vocab)
                        self._new_terms.append(term)
        return cast(list[int], ids)  # each None was filled in above

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
            self._append(rel, chunks)
        self._buffers = {}
        self.manifest["stamp"] += 1
        self.manifest[core.UNDO] = self._undo_record()
        self.layout.replace(self.root / MANIFEST, orjson.dumps(self.manifest))
        self.committed = _copied(self.manifest)

    def _append(self, rel: str, chunks: list[bytes]) -> None:
        """Append to a pool file through its kept fd: unbuffered, so nothing of a failed commit is left to be
        written later, after the next writer has cut the files back to the manifest."""
        fd = self._appending.get(rel)
        if fd is None:
            fd = self._appending[rel] = self.layout.open_for_write(
                self.root / rel, os.O_WRONLY | os.O_APPEND | os.O_CREAT
            )
        data = memoryview(b"".join(chunks))
        while data:
            data = data[os.write(fd, data) :]

    def close(self) -> None:
        """Close the files kept open for appending (a later commit opens them again; a writer that is garbage has
        them closed too)."""
        _close_all(self._appending)

    def _undo_record(self) -> dict:
        """How to go back to the last committed manifest (core.pools.UNDO), for the trajectories added since."""
        before = self.committed
        added, self._fingerprints = self._fingerprints, {}
        return {
            "counts": {k: v for k, v in before.items() if k not in ("trajectories", "format", core.UNDO)},
            "generations": {tid: before["trajectories"].get(tid) for tid in added},
            "fingerprints": {tid: fp for tid, fp in added.items() if fp},
        }

    def rollback(self, manifest: dict) -> None:
        """Make `manifest` (an earlier committed one) the committed manifest again: what was appended since is no
        longer part of the pools (the next writer truncates it away). This writer is spent afterwards."""
        manifest = core.with_cut(manifest, self.manifest["stamp"] + 1)  # the undone documents' segments are stale
        self.layout.replace(self.root / MANIFEST, orjson.dumps(manifest))
        self.manifest = self.committed = manifest
        self._buffers, self._new_terms, self._fingerprints = {}, [], {}
        self.close()


def _close_all(fds: dict[str, int]) -> None:
    for fd in fds.values():
        os.close(fd)
    fds.clear()


def _copied(manifest: dict) -> dict:
    """A copy of `manifest` that adding and committing leave as it is: they change its numbers, the pools' nested
    counts and the trajectories' generations. (copy.deepcopy took 7 ms a commit at 18,000 trajectories, and a
    commit per trajectory made an insert quadratic; this takes 0.3 ms.)"""
    pools = {name: dict(pool, fields=dict(pool["fields"])) for name, pool in manifest["pools"].items()}
    return dict(manifest, pools=pools, trajectories=dict(manifest["trajectories"]))


def _remove(folder: Path) -> None:
    """A fresh pools folder's leftover (a link is removed itself, never followed)."""
    if folder.is_symlink() or not folder.is_dir():
        folder.unlink()
    else:
        shutil.rmtree(folder)
