"""Pools are built incrementally on insert, survive a killed writer, and rebuild identically with reindex."""

from runbook.ingest import insert_paths
from runbook.pools import Retriever, insert_listener, reindex
from runbook.pools.storage import PoolWriter, open_snapshot
from runbook.store import Store
from tests.conftest import make_trajectory, write_jsonl

PAGE = "RootWebArea '{title}'\n\t[1] heading '{title}'\n\t[2] link 'Home'\n\t[3] gridcell '{body}'"


def _trajectory(tid: str, body: str, start: int = 0, n: int = 3):
    texts = [PAGE.format(title=f"Page {i}", body=f"{body} {i}") for i in range(n)]
    return make_trajectory(tid, n, texts=texts, start=start, goal=f"look at {body}")


def _insert(store: Store, tmp_path, trajectories, name="in.jsonl", replace=False):
    path = write_jsonl(tmp_path / name, trajectories)
    return insert_paths(store, [path], listeners=[insert_listener(store)], workers=1, replace=replace)


def _live_ids(store: Store, pool: str = "slices") -> set[tuple[str, int]]:
    snap = open_snapshot(store.layout)
    return {(d["t"], d["i"]) for d, alive in zip(snap.docs(pool), snap.live(pool)) if alive}


def test_insert_appends_without_rewriting(store, tmp_path):
    _insert(store, tmp_path, [_trajectory("t-a", "alpha"), _trajectory("t-b", "bravo", start=10)])
    post = store.layout.pools / "slices" / "page.post"
    before = post.read_bytes()
    assert _live_ids(store) == {(t, i) for t in ("t-a", "t-b") for i in range(3)}
    _insert(store, tmp_path, [_trajectory("t-c", "charlie", start=20)], name="more.jsonl")
    after = post.read_bytes()
    assert after.startswith(before) and len(after) > len(before)  # appended, earlier bytes untouched
    assert ("t-c", 2) in _live_ids(store)
    hits = Retriever(store).shortlist("Which page shows charlie?", k=3)
    assert hits and hits[0]["trajectory_id"] == "t-c"


def test_replaced_trajectory_supersedes_its_old_documents(store, tmp_path):
    _insert(store, tmp_path, [_trajectory("t-a", "alpha")])
    _insert(store, tmp_path, [_trajectory("t-a", "zulu", n=2)], name="new.jsonl", replace=True)
    assert _live_ids(store) == {("t-a", 0), ("t-a", 1)}
    assert Retriever(store).shortlist("alpha", k=5) == []
    assert Retriever(store).shortlist("zulu", k=5)[0]["trajectory_id"] == "t-a"


def test_uncommitted_tail_of_a_killed_writer_is_dropped(store, tmp_path):
    _insert(store, tmp_path, [_trajectory("t-a", "alpha")])
    writer = PoolWriter(store.layout)
    from runbook.pools.documents import trajectory_docs

    writer.add(trajectory_docs(_trajectory("t-x", "xray"), "t-x"))
    for rel, chunks in writer._buffers.items():  # bytes hit the disk, but the manifest never committed
        with open(store.layout.pools / rel, "ab") as fh:
            fh.write(b"".join(chunks))
    assert ("t-x", 0) not in _live_ids(store)
    PoolWriter(store.layout).commit()  # the next writer truncates to the manifest
    assert _live_ids(store) == {("t-a", i) for i in range(3)}


def test_reindex_rebuilds_the_same_pools(store, tmp_path):
    _insert(store, tmp_path, [_trajectory("t-a", "alpha"), _trajectory("t-b", "bravo", start=10)])
    first = {pool: _live_ids(store, pool) for pool in ("slices", "events", "notes")}
    answer = Retriever(store).shortlist("bravo page", k=3)
    report = reindex(store, workers=1)
    assert report.trajectories == 2 and report.states == 6
    assert {pool: _live_ids(store, pool) for pool in ("slices", "events", "notes")} == first
    assert Retriever(store).shortlist("bravo page", k=3) == answer


def test_reindex_of_a_store_without_pools(store, tmp_path):
    insert_paths(store, [write_jsonl(tmp_path / "a.jsonl", [_trajectory("t-a", "alpha")])], workers=1)
    assert not (store.layout.pools / "manifest.json").exists()
    reindex(store, workers=1)
    assert _live_ids(store) == {("t-a", i) for i in range(3)}


def test_pool_files_kept_open_across_commits_are_closed_and_reopened(store, tmp_path):
    import gc
    import os

    from runbook.pools.documents import trajectory_docs

    def open_pool_files() -> int:
        pools = str(store.layout.pools.resolve())
        links = []
        for fd in os.listdir("/proc/self/fd"):
            try:
                links.append(os.readlink(f"/proc/self/fd/{fd}"))
            except OSError:  # the listing's own fd, gone already
                pass
        return sum(link.startswith(pools + os.sep) for link in links)

    _insert(store, tmp_path, [_trajectory("t-a", "alpha")])
    assert open_pool_files() == 0
    writer = PoolWriter(store.layout)
    writer.add(trajectory_docs(_trajectory("t-x", "xray"), "t-x"))
    writer.commit()
    assert open_pool_files() > 0  # the appended files stay open for the next commit
    writer.close()
    assert open_pool_files() == 0
    writer.add(trajectory_docs(_trajectory("t-y", "yankee"), "t-y"))
    writer.commit()  # after close: opened again
    assert open_pool_files() > 0
    del writer
    gc.collect()
    assert open_pool_files() == 0  # a writer that is garbage closes its files
    assert _live_ids(store) == {(t, i) for t in ("t-a", "t-x", "t-y") for i in range(3)}
