"""What the open pools hold in memory: their caches (BM25 segments, line counts) memory-mapped, the same arrays
np.load reads, paged in only where a query reads them (a truncated segment is rebuilt, as before); parsed documents
kept only up to a bound, and none kept by a pass over every document."""

from __future__ import annotations

import json
import mmap

import numpy as np
import pytest

from runbook.core.bm25 import PostingsKind, load_index
from runbook.core.files import load_arrays
from runbook.core.pools import PoolSnapshot
from runbook.ingest import insert_paths
from runbook.pools import insert_listener
from runbook.store import Store
from tests.conftest import shared_runs

RUNS = ["wa-shopping_admin-0", "wa-shopping_admin-1", "wa-gitlab-44", "wa-gitlab-104"]


@pytest.fixture(scope="module")
def real_store(tmp_path_factory) -> Store:
    folder = tmp_path_factory.mktemp("mapped")
    runs = shared_runs(*RUNS)
    (folder / "runs.jsonl").write_text("".join(json.dumps(runs[tid]) + "\n" for tid in RUNS))
    store = Store(folder / "store", create=True)
    insert_paths(store, [folder / "runs.jsonl"], listeners=[insert_listener(store)])
    return store


def caches(store: Store) -> list:
    found = sorted((store.root / "pools" / "cache").glob("*.npz"))
    assert found, "the insert wrote no cache"
    return found


def test_every_cache_reads_the_same_arrays_mapped_as_np_load_reads_whole(real_store):
    for path in caches(real_store):
        with open(path, "rb") as fh:
            mapped = load_arrays(fh)
        with np.load(path, allow_pickle=False) as whole:
            assert sorted(mapped) == sorted(whole.files)
            for name in whole.files:
                assert mapped[name].dtype == whole[name].dtype and np.array_equal(mapped[name], whole[name]), name
        big = max(mapped.values(), key=lambda a: a.nbytes)
        base = big
        while isinstance(base, np.ndarray):
            base = base.base
        assert isinstance(base, memoryview) and isinstance(base.obj, mmap.mmap)  # over the file, not a copy


def test_a_truncated_cache_is_rebuilt_with_the_same_index(real_store, tmp_path):
    snapshot = PoolSnapshot(real_store.root / "pools")
    before = load_index(snapshot, "slices", write=False)
    group = PostingsKind("slices", {"page": 1.0, "context": 2.0}).group
    (path,) = [p for p in caches(real_store) if p.name.startswith(group + "-")]
    raw = path.read_bytes()
    half = tmp_path / "half.npz"
    half.write_bytes(raw[: len(raw) // 2])
    half.replace(path)  # a new file, as every cache write is: `before` keeps its mapping of the old one
    try:
        after = load_index(snapshot, "slices", write=False)  # the half file is not read: built again
        for term in ("product", "price", "gitlab", "nothing-like-it"):
            assert all(np.array_equal(b, a) for b, a in zip(before.postings(term), after.postings(term)))
        assert np.array_equal(before.live, after.live) and before.segments[0].stems == after.segments[0].stems
    finally:
        path.write_bytes(raw)


def test_a_pass_over_every_document_keeps_none_and_lookups_keep_a_bounded_number(real_store, monkeypatch):
    import runbook.core.pools as pools

    docs = PoolSnapshot(real_store.root / "pools").docs("slices")
    assert len(docs) > 20
    every = list(docs)
    assert not docs._parsed  # read, not kept
    monkeypatch.setattr(pools, "PARSED_KEPT", 10)
    for n in range(len(docs)):
        assert docs[n] == every[n] and len(docs._parsed) <= 10
    assert docs.read(3) == every[3]
