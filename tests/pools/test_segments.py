"""The pools' caches in segments (core.segments): an index read from segments built over several inserts, a
replaced trajectory and merges scores every document as the single index rebuilt over the whole store did, to the
bit; line counts likewise; a segment that is stale, truncated or planted is built again rather than trusted; an
insert builds only its own documents; a merge cut short (an exception, kill -9) leaves an index that reads right."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from runbook.core import segments
from runbook.core.bm25 import DEFAULT_FIELDS, PostingsKind, load_index
from runbook.core.boilerplate import load_line_counts
from runbook.core.pools import PoolSnapshot
from runbook.core.text import stem
from runbook.core.weights import K1, B, idf, term_weight
from runbook.ingest import insert_paths
from runbook.pools import insert_listener
from runbook.store import Store
from tests.conftest import make_trajectory, shared_runs, write_jsonl

RUNS = ["wa-shopping-21", "wa-gitlab-44", "wa-shopping-24", "wa-shopping_admin-11", "wa-gitlab-134", "wa-reddit-69",
        "wa-reddit-399", "wa-gitlab-169", "wa-shopping_admin-42", "wa-shopping-145", "wa-shopping_admin-78",
        "wa-map-36", "wa-map-53"]  # fmt: skip
CONFIGS = [*DEFAULT_FIELDS.items(), ("slices", {"page": 1.0}), ("slices", {"page": 1.0, "context": 0.3})]
"""The insert's indexes, the BM25 baseline's, and one whose weights make term frequencies fractions."""


@pytest.fixture(scope="module")
def runs() -> dict[str, dict]:
    return shared_runs(*RUNS)


def monolithic(snapshot: PoolSnapshot, pool: str, fields: dict[str, float]) -> tuple:
    """The single index over the whole store, as every insert rebuilt it before segments (7116bf0's build_index):
    (indptr, docs, weights, {stem: column}, live)."""
    live = snapshot.live(pool)
    terms = snapshot.terms()
    stems: dict[str, int] = {}
    term_stem = np.fromiter((stems.setdefault(stem(t), len(stems)) for t in terms), dtype=np.uint64, count=len(terms))
    keys, tfs = [], []
    for field, weight in fields.items():
        post = snapshot.postings(pool, field)
        post = post[live[post["doc"]]] if len(live) else post[:0]
        stems_of = term_stem[post["term"]] if len(post) else np.empty(0, dtype=np.uint64)
        keys.append((stems_of << np.uint64(32)) | post["doc"].astype(np.uint64))
        tfs.append(post["tf"].astype(np.float32) * weight)
    key, tf = np.concatenate(keys), np.concatenate(tfs)
    order = np.argsort(key, kind="stable")
    key, tf = key[order], tf[order]
    first = np.ones(len(key), dtype=bool)
    first[1:] = key[1:] != key[:-1]
    starts = np.flatnonzero(first)
    tf = np.add.reduceat(tf, starts) if len(starts) else tf
    key = key[starts]
    doc, col = (key & np.uint64(0xFFFFFFFF)).astype(np.uint32), (key >> np.uint64(32)).astype(np.uint32)
    n_live = max(int(live.sum()), 1)
    doc_len = np.bincount(doc, weights=tf, minlength=len(live))
    avg = doc_len[live].mean() if live.any() else 1.0
    df = np.bincount(col, minlength=max(len(stems), 1))
    weights = (idf(n_live, df).astype(np.float32)[col] * term_weight(tf, doc_len[doc], avg, K1, B)).astype(np.float32)
    return np.concatenate(([0], np.cumsum(df))).astype(np.int64), doc, weights, stems, live


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def assert_same_index(snapshot: PoolSnapshot, pool: str, fields: dict[str, float], *, write: bool = False) -> None:
    index = load_index(snapshot, pool, fields, write=write)
    indptr, docs, weights, stems, live = monolithic(snapshot, pool, fields)
    assert same_bits(index.live, live) and index.n_docs == len(live)
    for term, column in stems.items():
        lo, hi = indptr[column], indptr[column + 1]
        found = index.postings(term)
        assert same_bits(found[0], docs[lo:hi]) and same_bits(found[1], weights[lo:hi]), (pool, fields, term)
        assert index.df(term) == hi - lo
    rng = random.Random(len(live))
    vocabulary = sorted(stems)
    for _ in range(40):
        query = {t: rng.choice([1.0, 1.5]) for t in rng.sample(vocabulary, rng.randint(1, 12))}
        query["never-seen-stem"] = 1.0
        scores = np.zeros(len(live), dtype=np.float32)
        for term, weight in query.items():
            if term in stems:
                lo, hi = indptr[stems[term]], indptr[stems[term] + 1]
                scores[docs[lo:hi]] += np.float32(weight) * weights[lo:hi]
        assert same_bits(index.scores(query), scores)
        k = rng.choice([1, 5, 50])
        best = np.argpartition(-scores, k - 1)[:k] if (scores > 0).sum() >= k else np.flatnonzero(scores > 0)
        expected = sorted(((int(d), float(scores[d])) for d in best), key=lambda ds: -ds[1])
        assert [s for _, s in index.top(query, k)] == [s for _, s in expected]


def assert_same_line_counts(snapshot: PoolSnapshot, *, write: bool = False) -> None:
    """The line counts as load_line_counts built them over the whole store before segments."""
    counts = load_line_counts(snapshot, write=write)
    docs, live = snapshot.docs("slices"), snapshot.live("slices")
    site_states: dict[str, int] = {}
    for doc, alive in zip(docs, live):
        if alive:
            site_states[doc.get("s") or ""] = site_states.get(doc.get("s") or "", 0) + 1
    assert counts.site_states == site_states
    all_hashes = snapshot.line_hashes()
    hashes, expected = np.unique(all_hashes, return_counts=True)
    assert np.array_equal(counts.count(hashes), expected)
    assert np.array_equal(counts.count(np.asarray([12345], dtype="<u8")), [0])
    doc_of = np.repeat(np.arange(len(docs)), [doc["nl"] for doc in docs])
    for h in hashes[:: max(1, len(hashes) // 300)]:
        assert np.array_equal(counts.docs_with(int(h)), doc_of[all_hashes == h])


def assert_same(store: Store, *, write: bool = False) -> None:
    snapshot = PoolSnapshot(store.layout.pools)
    for pool, fields in CONFIGS:
        assert_same_index(snapshot, pool, fields, write=write)
    assert_same_line_counts(snapshot, write=write)


def insert(store: Store, folder: Path, runs: list[dict], name: str, **options) -> None:
    source = folder / f"{name}.jsonl"
    source.write_text("".join(json.dumps(run) + "\n" for run in runs))
    insert_paths(store, [source], listeners=[insert_listener(store)], workers=1, **options)


def segment_files(store: Store, group: str) -> list[str]:
    return sorted(n for n in os.listdir(store.layout.pools / "cache") if n.startswith(group + "-"))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_an_index_in_segments_scores_as_the_single_index_did(runs, tmp_path, monkeypatch, seed):
    merges = []
    merge = PostingsKind.merge
    monkeypatch.setattr(
        PostingsKind, "merge", lambda self, parts, stamp: merges.append(len(parts)) or merge(self, parts, stamp)
    )
    rng = random.Random(seed)
    order = rng.sample(RUNS, len(RUNS))
    store = Store(tmp_path / "store", create=True)
    batches, at = [], 0
    while at < len(order):
        size = rng.choice([1, 1, 2, 4])
        batches.append(order[at : at + size])
        at += size
    replaced = rng.randrange(len(batches) - 1)
    for n, batch in enumerate(batches):
        insert(store, tmp_path, [runs[tid] for tid in batch], f"batch-{n}")
        if n == replaced:  # a new generation of a stored run: its old documents stay, dead
            run = dict(runs[order[0]], goal="A replaced goal about the Lumaflex band")
            run["states"] = [
                dict(s, accessibility_tree=f"RootWebArea 'Lumaflex {i}'") for i, s in enumerate(run["states"])
            ]
            insert(store, tmp_path, [run], f"replaced-{n}", replace=True)
        assert_same(store, write=n % 2 == 0)  # every other time the readers write their own configurations too
    assert merges, "no segments were merged"
    assert 1 <= len(segment_files(store, PostingsKind("slices", DEFAULT_FIELDS["slices"]).group)) <= len(batches)


def test_the_merge_rule_keeps_a_few_segments_and_merges_small_ones_first():
    assert segments.merge_point([100, 20, 5]) is None
    assert segments.merge_point([100, 30, 10, 15]) == 0  # the ones after 100 add up to half of it
    assert segments.merge_point([100, 30, 10, 5]) == 1
    sizes, most = [1_000_000], 1
    for _ in range(5000):
        sizes.append(100)
        while (point := segments.merge_point(sizes)) is not None:
            sizes[point:] = [sum(sizes[point:])]
        most = max(most, len(sizes))
    assert most <= 12 and sum(sizes) == 1_500_000


def test_an_insert_builds_only_its_own_documents(runs, tmp_path, monkeypatch):
    store = Store(tmp_path / "store", create=True)
    insert(store, tmp_path, [runs[tid] for tid in RUNS[:8]], "first")
    before = PoolSnapshot(store.layout.pools).manifest["pools"]
    built = []
    build_range = segments.build_range
    monkeypatch.setattr(
        segments,
        "build_range",
        lambda s, kind, lo, hi: built.append((kind.pool, lo[0], hi[0])) or build_range(s, kind, lo, hi),
    )
    insert(store, tmp_path, [runs[RUNS[8]]], "one")
    after = PoolSnapshot(store.layout.pools).manifest["pools"]
    expected = {(pool, before[pool]["docs"], after[pool]["docs"]) for pool in DEFAULT_FIELDS}
    assert set(built) == expected and len(built) == 4  # three indexes and the line counts, each its new documents
    assert_same(store)


def test_documents_taken_back_are_not_read_from_a_segment_built_over_them(runs, tmp_path):
    """A reader wrote segments over a trajectory whose catalog rows then failed to commit: its documents were taken
    back and their numbers given to the next trajectory's, of the same sizes to the byte (the same id, one word
    changed), so only the cut the rollback recorded (core.pools.CUTS) says those segments are stale."""
    store = Store(tmp_path / "store", create=True)
    insert(store, tmp_path, [runs[tid] for tid in RUNS[:3]], "first")
    written = []

    def read_then_fail(store_, staged, status) -> None:
        snapshot = PoolSnapshot(store.layout.pools)
        for pool, fields in DEFAULT_FIELDS.items():
            load_index(snapshot, pool, fields, write=True)
        load_line_counts(snapshot, write=True)
        written.extend(os.listdir(store.layout.pools / "cache"))
        raise RuntimeError("the catalog's commit failed")

    def late(word: str) -> Path:
        page = f"RootWebArea 'Late'\n\tStaticText 'the {word} order'"
        return write_jsonl(tmp_path / f"{word}.jsonl", [make_trajectory("late-1", 4, texts=[page] * 4)])

    with pytest.raises(RuntimeError):
        insert_paths(store, [late("gone")], listeners=[insert_listener(store), read_then_fail], workers=1)
    assert len(written) > 4  # the reader's segments over the documents taken back
    insert_paths(store, [late("done")], listeners=[insert_listener(store)], workers=1)
    snapshot = PoolSnapshot(store.layout.pools)
    assert snapshot.cuts() and load_index(snapshot, "slices", write=False).df("gone") == 0
    assert_same(store)


def test_a_truncated_garbage_or_planted_segment_is_built_again(runs, tmp_path):
    store = Store(tmp_path / "store", create=True)
    insert(store, tmp_path, [runs[tid] for tid in RUNS[:4]], "first")
    insert(store, tmp_path, [runs[tid] for tid in RUNS[4:5]], "second")
    cache = store.layout.pools / "cache"
    for name in sorted(os.listdir(cache)):
        path, raw = cache / name, (cache / name).read_bytes()
        for planted in (raw[: len(raw) // 2], b"PK\x03\x04 not a zip", raw[:-1] + b"\x00"):
            path.write_bytes(planted)
            assert_same(store)
        path.unlink()
        os.symlink(tmp_path / "elsewhere.npz", path)  # refused by the store's opener as a link
        assert_same(store)
        path.unlink()
        path.write_bytes(raw)
    other = Store(tmp_path / "other", create=True)  # other runs, their segments named as this folder's
    insert(other, tmp_path, [runs[tid] for tid in RUNS[6:11]], "other")
    theirs, ours = PoolSnapshot(other.layout.pools).lineage, PoolSnapshot(store.layout.pools).lineage
    for name in os.listdir(cache):
        (cache / name).unlink()
    for name in os.listdir(other.layout.pools / "cache"):
        (cache / name.replace(f"-{theirs}-", f"-{ours}-")).write_bytes(
            (other.layout.pools / "cache" / name).read_bytes()
        )
    assert_same(store)


def test_a_merge_cut_short_leaves_an_index_that_reads_right(runs, tmp_path, monkeypatch):
    store = Store(tmp_path / "store", create=True)
    insert(store, tmp_path, [runs[tid] for tid in RUNS[:2]], "first")

    def failing(self, parts, stamp):
        raise RuntimeError("merge failed")

    monkeypatch.setattr(PostingsKind, "merge", failing)
    with pytest.raises(RuntimeError, match="merge failed"):
        insert(store, tmp_path, [runs[tid] for tid in RUNS[2:6]], "second")  # large enough to be merged
    assert_same(store)
    monkeypatch.undo()
    insert(store, tmp_path, [runs[RUNS[6]]], "third")
    assert_same(store)


def test_a_writer_killed_while_it_writes_a_merged_segment_leaves_an_index_that_reads_right(runs, tmp_path):
    store = Store(tmp_path / "store", create=True)
    insert(store, tmp_path, [runs[tid] for tid in RUNS[:2]], "first")
    source = tmp_path / "second.jsonl"
    source.write_text("".join(json.dumps(runs[tid]) + "\n" for tid in RUNS[2:6]))
    killed = (
        "import os, sys, numpy\n"
        "from runbook.core import bm25\n"
        "from runbook.ingest import insert_paths\n"
        "from runbook.pools import insert_listener\n"
        "from runbook.store import Store\n"
        "merge, savez = bm25.PostingsKind.merge, numpy.savez\n"
        "def half(fh, **arrays):\n"
        "    fh.write(b'PK'); fh.flush(); os._exit(9)\n"
        "def merging(self, parts, stamp):\n"
        "    numpy.savez = half\n"
        "    return merge(self, parts, stamp)\n"
        "bm25.PostingsKind.merge = merging\n"
        "store = Store(sys.argv[1])\n"
        "insert_paths(store, [sys.argv[2]], listeners=[insert_listener(store)], workers=1)\n"
    )
    done = subprocess.run([sys.executable, "-c", killed, str(store.root), str(source)], cwd=Path(__file__).parents[2])
    assert done.returncode == 9
    assert_same(Store(store.root))  # read as it was left: the documents after the last segment built in memory
    insert(Store(store.root), tmp_path, [runs[RUNS[6]]], "third")
    assert_same(Store(store.root))


def test_a_read_only_reader_builds_in_memory_and_writes_nothing(runs, tmp_path):
    store = Store(tmp_path / "store", create=True)
    insert(store, tmp_path, [runs[tid] for tid in RUNS[:3]], "first")
    cache = store.layout.pools / "cache"
    for name in os.listdir(cache):
        (cache / name).unlink()
    assert_same(store)
    assert os.listdir(cache) == []


def test_a_reader_whose_listing_a_writer_merged_away_lists_again(runs, tmp_path, monkeypatch):
    """A writer merges segments and removes the pieces between a reader's listing and its reading them: the
    reader lists again and reads the merged segment rather than building the documents again."""
    store = Store(tmp_path / "store", create=True)
    saved = []
    save = segments.save
    monkeypatch.setattr(
        segments, "save", lambda s, kind, seg: saved.append(kind.file_name(s, seg)) or save(s, kind, seg)
    )
    for n, tid in enumerate(RUNS[:4]):
        insert(store, tmp_path, [runs[tid]], f"one-{n}")
    snapshot = PoolSnapshot(store.layout.pools)
    group = PostingsKind("slices", DEFAULT_FIELDS["slices"]).group
    gone = [name for name in saved if name.startswith(group) and name not in segment_files(store, group)]
    assert gone, "no segment was merged away"
    listings = iter([gone])
    monkeypatch.setattr(snapshot, "cache_names", lambda: next(listings, None) or os.listdir(snapshot.cache_dir))
    monkeypatch.setattr(segments, "build_range", lambda *a: pytest.fail("built the documents again"))
    assert_same_index(snapshot, "slices", DEFAULT_FIELDS["slices"])


def test_a_segment_an_old_reader_writes_after_a_reindex_is_not_read_in_the_new_folder(tmp_path):
    """A reader still on the pools a reindex swapped out writes its segments into the new folder's cache: the new
    folder's documents have the same numbers (here the same sizes to the byte, one word changed), so only the folder
    the segments name (core.pools.BORN) says they are another's."""
    from runbook.pools.build import reindex

    store = Store(tmp_path / "store", create=True)

    def run(tid: str, word: str) -> Path:
        page = f"RootWebArea 'Late'\n\tStaticText 'the {word} order'"
        return write_jsonl(tmp_path / f"{tid}-{word}.jsonl", [make_trajectory(tid, 3, texts=[page] * 3)])

    for source in (run("a", "gone"), run("b", "kept")):
        insert_paths(store, [source], listeners=[insert_listener(store)], workers=1)
    old = PoolSnapshot(store.layout.pools)
    insert_paths(store, [run("a", "done")], listeners=[insert_listener(store)], workers=1, replace=True)
    reindex(store, workers=1)
    cache = store.layout.pools / "cache"
    for name in os.listdir(cache):
        (cache / name).unlink()
    load_index(old, "slices", write=True)  # into the new folder's cache, under the old folder's name
    load_line_counts(old, write=True)
    assert os.listdir(cache)
    new = PoolSnapshot(store.layout.pools)
    assert new.lineage != old.lineage and load_index(new, "slices", write=False).df("gone") == 0
    assert_same(store)
