"""One query reads one generation of the pools, whatever another thread loads meanwhile: a Retriever shared by a
server's threads once reloaded its indexes in place, so a query that had read the documents of one stamp ranked
with the index of the next (IndexError: index 497 is out of bounds for axis 0 with size 484)."""

from __future__ import annotations

import threading

import pytest

from runbook.core.recall import Recall
from runbook.ingest import insert_paths
from runbook.pools import Retriever, insert_listener
from tests.conftest import make_trajectory, write_jsonl

QUESTION = "What price does the admin list for the Quest Lumaflex Band?"


def _insert(store, tmp_path, name: str, first: int, count: int, repeats: int) -> None:
    page = "RootWebArea 'Edit Product'\n" + "\tStaticText 'Quest Lumaflex Band price $24.00'\n" * repeats
    runs = [make_trajectory(f"{name}-{n}", 3, texts=[page] * 3, start=n % 50) for n in range(first, first + count)]
    insert_paths(store, [write_jsonl(tmp_path / f"{name}.jsonl", runs)], listeners=[insert_listener(store)], workers=1)


def test_a_query_keeps_its_generation_while_another_thread_loads_the_next(store, tmp_path, monkeypatch):
    _insert(store, tmp_path, "old", 0, 4, repeats=1)
    retriever = Retriever(store)
    retriever.warm()
    paused, resume = threading.Event(), threading.Event()
    rank_states = Recall.rank_states

    def pausing(self, analysis, query):
        if threading.current_thread().name == "slow-query" and not paused.is_set():
            paused.set()  # this query has read its documents: let the store move on under it
            resume.wait(60)
        return rank_states(self, analysis, query)

    monkeypatch.setattr(Recall, "rank_states", pausing)
    outcome: dict = {}

    def slow() -> None:
        try:
            outcome["items"] = retriever.search(QUESTION, 4000)[0]
        except Exception as exc:  # what the server turned into a 500
            outcome["error"] = repr(exc)

    thread = threading.Thread(target=slow, name="slow-query")
    thread.start()
    assert paused.wait(60)
    _insert(store, tmp_path, "new", 100, 30, repeats=6)  # better matches: they lead the next stamp's ranking
    assert any(item.trajectory_id.startswith("new-") for item in retriever.search(QUESTION, 4000)[0])
    resume.set()
    thread.join(60)
    assert "error" not in outcome, outcome["error"]
    assert outcome["items"] and all(item.trajectory_id.startswith("old-") for item in outcome["items"])


def test_a_query_does_not_cite_a_trajectory_before_the_catalog_lists_it(store, tmp_path):
    """The pools commit inside the writer's catalog transaction, a moment before its rows: a query in that moment
    cited a trajectory that GET /trajectories/<id> answered 404 for (or whose insert was then rolled back)."""
    _insert(store, tmp_path, "old", 0, 3, repeats=1)
    retriever = Retriever(store)
    retriever.warm()
    seen: dict = {}

    def between_pools_and_catalog(store_, staged, status) -> None:
        seen["row"] = store.row(staged.trajectory_id)  # not committed yet: another connection does not see it
        seen["items"] = retriever.search(QUESTION, 4000)[0]

    runs = [make_trajectory("new-0", 3, texts=["RootWebArea 'x'\n\tStaticText 'Quest Lumaflex Band price'"] * 3)]
    insert_paths(
        store,
        [write_jsonl(tmp_path / "new.jsonl", runs)],
        listeners=[insert_listener(store), between_pools_and_catalog],
        workers=1,
    )
    assert seen["row"] is None
    assert seen["items"] and not any(item.trajectory_id == "new-0" for item in seen["items"])
    assert any(item.trajectory_id == "new-0" for item in retriever.search(QUESTION, 4000)[0])  # once committed


def test_a_snapshot_reads_its_own_pools_after_reindex_swaps_the_folder(store, tmp_path):
    """A snapshot reads the files it opened: `runbook reindex` swapping in a new pools folder (where documents
    have other numbers) once gave a query that had started before it another folder's documents."""
    from runbook.core.pools import PoolSnapshot
    from runbook.pools.build import reindex
    from runbook.pools.storage import safe_opener

    _insert(store, tmp_path, "a", 0, 3, repeats=1)
    replaced = make_trajectory("a-0", 2, texts=["RootWebArea 'Replaced'\n\tStaticText 'a new page'"] * 2)
    with store.writer() as writer:
        writer.listeners.append(insert_listener(store))
        writer.insert(replaced, replace=True)
    snapshot = PoolSnapshot(store.layout.pools, safe_opener(store.layout))
    before = [(doc["t"], doc["i"]) for doc in snapshot.docs("slices")]
    reindex(store, workers=1)  # documents renumbered: a-0's old generation is gone
    fresh = PoolSnapshot(store.layout.pools, safe_opener(store.layout))
    assert fresh.stamp > snapshot.stamp  # stamps only grow, across a reindex too
    assert len(fresh.docs("slices")) < len(before)
    assert [(doc["t"], doc["i"]) for doc in snapshot.docs("slices")] == before
    assert "a new page" in "\n".join(snapshot.page(len(before) - 1)[1].lines())  # a-0's replacement, its last doc


def test_a_reader_on_an_older_stamp_leaves_the_newer_cache_alone(store, tmp_path, monkeypatch):
    """Segments are named by the stamp they were built at: a reader still on the old stamp once wrote its index
    over the one the writer had just built for the new stamp, and every next reader rebuilt it (or read it
    half-written). A segment built after a reader's stamp is not read by it (documents it covers may have been
    taken back since): the old reader builds its own, and the new one still reads the writer's."""
    from runbook.core import bm25, segments
    from runbook.core.pools import PoolSnapshot
    from runbook.pools.storage import safe_opener

    _insert(store, tmp_path, "a", 0, 3, repeats=1)
    old = PoolSnapshot(store.layout.pools, safe_opener(store.layout))
    _insert(store, tmp_path, "b", 10, 3, repeats=1)  # the writer builds the new stamp's segments
    bm25.load_index(old, "slices")  # the new segments are past its stamp: built, and written under its own stamp
    builds = []
    build_range = segments.build_range
    monkeypatch.setattr(segments, "build_range", lambda *a: builds.append(a[1]) or build_range(*a))
    new = PoolSnapshot(store.layout.pools, safe_opener(store.layout))
    bm25.load_index(new, "slices")
    assert builds == []  # read from the writer's segments, not rebuilt


def test_documents_a_killed_writer_left_do_not_hold_a_server_on_an_old_stamp(store, tmp_path):
    """A writer killed between the pools' commit and the catalog's leaves documents of a trajectory the catalog will
    never list; a server waiting for the catalog to agree must not wait for ever: with no writer at work, the new
    stamp is taken."""
    import subprocess
    import sys
    from pathlib import Path

    _insert(store, tmp_path, "old", 0, 3, repeats=1)
    retriever = Retriever(store)
    retriever.warm()
    killed = (
        "import os, sys\n"
        "from runbook.store import Store\n"
        "from runbook.pools import insert_listener\n"
        "from tests.conftest import make_trajectory\n"
        "store = Store(sys.argv[1])\n"
        "with store.writer() as writer:\n"
        "    writer.listeners += [insert_listener(store), lambda *a: os._exit(9)]\n"
        "    writer.insert(make_trajectory('orphan-1', 2))\n"
    )
    done = subprocess.run([sys.executable, "-c", killed, str(store.root)], cwd=Path(__file__).parents[2])
    assert done.returncode == 9 and store.row("orphan-1") is None
    _insert(store, tmp_path, "new", 100, 2, repeats=6)
    assert any(item.trajectory_id.startswith("new-") for item in retriever.search(QUESTION, 4000)[0])


def test_a_read_only_reader_reads_the_segments_an_insert_built(store, tmp_path, monkeypatch):
    """The sandbox reads the store read-only: the segments the insert built serve it, nothing is built again."""
    from runbook.core import bm25, boilerplate, segments
    from runbook.core.pools import PoolSnapshot
    from runbook.pools.storage import safe_opener

    _insert(store, tmp_path, "a", 0, 3, repeats=1)
    _insert(store, tmp_path, "b", 10, 1, repeats=1)
    monkeypatch.setattr(segments, "build_range", lambda *a: pytest.fail("built a segment again"))
    snapshot = PoolSnapshot(store.layout.pools, safe_opener(store.layout))
    for pool in bm25.DEFAULT_FIELDS:
        bm25.load_index(snapshot, pool, write=False)
    boilerplate.load_line_counts(snapshot, write=False)
