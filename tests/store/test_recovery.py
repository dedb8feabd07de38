"""A writer killed at each step of a commit, of a close and of a reindex: what it leaves is invisible to every reader
(the host's and the sandbox's programs, which read the store's files themselves), `runbook store check` names it,
and the next open finishes what committed and removes the rest."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from runbook.cli import main
from runbook.ingest import insert_paths
from runbook.pools import build, insert_listener, reindex
from runbook.pools.search import Retriever
from runbook.serve.service import MemoryService
from runbook.store import Store, safe_write
from runbook.store import writer as store_module
from runbook.store.recovery import find_leftovers
from tests.conftest import make_trajectory, write_jsonl
from tests.sandbox.test_programs import TOOLS
from tests.store.crash import die, run_in_child

PAGE = "\n".join(f"\t[{i}] gridcell 'invoice {i} amount {i * 3}'" for i in range(12))


@pytest.fixture
def kept(tmp_path):
    """A store holding one committed trajectory, with its pools."""
    store = Store(tmp_path / "store", create=True)
    source = write_jsonl(tmp_path / "kept.jsonl", [make_trajectory("kept", 2, texts=[PAGE, PAGE])])
    insert_paths(store, [source], listeners=[insert_listener(store)], workers=1)
    return store


def insert_in_child(store: Store, tmp_path, tid: str = "lost") -> None:
    source = write_jsonl(tmp_path / f"{tid}.jsonl", [make_trajectory(tid, 3, texts=[PAGE] * 3)])

    def run() -> None:
        insert_paths(Store(store.root), [source], listeners=[insert_listener(store)], workers=1)

    killed, _, _ = run_in_child(run, None)
    assert killed


def search(store: Store, pattern: str) -> str:
    """The sandbox's `search` program over the store's files, as the agent runs it."""
    env = dict(os.environ, RUNBOOK_STORE_DIR=str(store.root))
    proc = subprocess.run(
        [sys.executable, str(TOOLS / "search"), pattern], env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def check(store: Store) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["--store", str(store.root), "store", "check"])
    return result.exit_code, result.output


def visible(store: Store) -> list[str]:
    return sorted(name for name in os.listdir(store.root / "trajectories") if not name.startswith("."))


def test_a_writer_killed_before_its_catalog_commit_leaves_nothing_any_reader_sees(kept, tmp_path, monkeypatch):
    monkeypatch.setattr(store_module.StoreWriter, "_insert_rows", lambda *a, **k: die())
    insert_in_child(kept, tmp_path)
    assert visible(kept) == ["kept"]
    assert "lost" not in search(kept, "invoice")
    code, out = check(kept)
    assert code == 1 and "trajectories/.pending-lost: staged for a commit that never happened" in out
    assert ".dirty: a writer stopped before it finished" in out
    code, out = check(Store(kept.root))
    assert code == 0 and "nothing left by a stopped writer" in out
    assert sorted(os.listdir(kept.root / "trajectories")) == ["kept"]


def test_a_writer_killed_after_its_commit_is_finished_by_the_next_open(kept, tmp_path, monkeypatch):
    monkeypatch.setattr(store_module, "move_into_place", lambda *a, **k: die())
    insert_in_child(kept, tmp_path)
    code, out = check(kept)
    assert code == 1 and "trajectories/.pending-lost: committed, not yet moved to trajectories/lost" in out
    store = Store(kept.root)
    assert visible(store) == ["kept", "lost"]
    assert len(store.load("lost").states) == 3
    assert "lost state 2" in search(store, "invoice 11")
    assert check(store)[0] == 0


def test_a_server_killed_mid_close_leaves_the_trajectory_open_and_unseen(kept, tmp_path, monkeypatch):
    service = MemoryService(kept.root, screenshot_root=tmp_path)
    service.open_trajectory("streamed", goal="Read the invoices")
    for n in range(3):
        service.append_state("streamed", {"url": f"http://shop/{n}", "accessibility_tree": PAGE, "action": "noop()"})
    monkeypatch.setattr(store_module.StoreWriter, "_insert_rows", lambda *a, **k: die())

    def close() -> None:
        MemoryService(kept.root, screenshot_root=tmp_path).close_trajectory("streamed")

    assert run_in_child(close, None)[0]
    assert "streamed" not in search(kept, "invoice")  # the sandbox's search found its 60 states before
    monkeypatch.undo()
    restarted = MemoryService(kept.root, screenshot_root=tmp_path)
    assert restarted.trajectory("streamed")["open"] is True
    assert check(kept)[0] == 0
    assert restarted.close_trajectory("streamed")["status"] == "inserted"
    assert "streamed state 2" in search(kept, "invoice 11")


def test_pools_committed_just_before_a_killed_catalog_commit_are_undone(kept, tmp_path, monkeypatch):
    listener = build.PoolListener.__call__

    def then_die(self, *args, **kwargs):
        listener(self, *args, **kwargs)
        die()

    monkeypatch.setattr(build.PoolListener, "__call__", then_die)
    insert_in_child(kept, tmp_path)
    code, out = check(kept)
    assert code == 1 and "the pools hold trajectory 'lost' as the catalog never committed it" in out
    found = Retriever(Store(kept.root, recover=False)).find("invoice amount", 4000)  # a reader opened before
    assert {hit.trajectory_id for hit in found.slices} == {"kept"}
    assert check(kept)[0] == 0


def test_a_reindex_killed_leaves_its_pools_reported_and_removed_at_the_next_open(kept, monkeypatch):
    monkeypatch.setattr(build, "_swap", lambda *a: die())
    assert run_in_child(lambda: reindex(Store(kept.root), workers=1), None)[0]
    left = [name for name in os.listdir(kept.root) if name.startswith("pools.tmp-")]
    assert left, "the reindex's fresh pools stay behind a kill"
    code, out = check(kept)
    assert code == 1 and f"{left[0]}: pools a reindex was building" in out
    Store(kept.root)
    assert not [name for name in os.listdir(kept.root) if name.startswith("pools.")]
    assert check(kept)[0] == 0


def test_a_reindex_killed_between_its_two_renames_swaps_the_new_pools_in(kept, monkeypatch):
    rename = os.replace

    def cut(source, target, *args, **kwargs):
        if os.path.basename(source).startswith("pools.tmp-"):
            die()
        return rename(source, target, *args, **kwargs)

    monkeypatch.setattr(build.os, "replace", cut)
    assert run_in_child(lambda: reindex(Store(kept.root), workers=1), None)[0]
    monkeypatch.undo()
    assert not (kept.root / "pools").exists()
    store = Store(kept.root)
    assert find_leftovers(store.layout, store.rows()) == []
    assert [hit.trajectory_id for hit in Retriever(store).find("invoice amount", 4000).slices][:1] == ["kept"]


@pytest.mark.parametrize("written", [".dirty", "manifest.json", "trajectories.tsv"])
def test_a_write_killed_before_its_rename_leaves_a_temporary_file_reported_and_removed(
    kept, tmp_path, monkeypatch, written
):
    """A file replaced whole (the writer's `.dirty` mark, the pools' manifest, a summary) is written under a
    temporary name and renamed: a kill in between left `.<name>.tmp<pid>-<random>` for ever, which `store check`
    did not report and no open removed (each kill could add one)."""
    rename = os.rename

    def cut(source, target, *args, **kwargs):
        if str(source).startswith(f".{written}.tmp"):
            die()
        return rename(source, target, *args, **kwargs)

    monkeypatch.setattr(safe_write.os, "rename", cut)
    insert_in_child(kept, tmp_path)
    monkeypatch.undo()
    left = [str(p.relative_to(kept.root)) for p in kept.root.rglob(f".{written}.tmp*")]
    assert len(left) == 1
    code, out = check(kept)
    assert code == 1 and f"{left[0]}: a file's new content, never renamed into place" in out
    Store(kept.root)
    assert not list(kept.root.rglob("*.tmp[0-9]*"))
    code, out = check(kept)
    assert code == 0 and "nothing left by a stopped writer" in out
