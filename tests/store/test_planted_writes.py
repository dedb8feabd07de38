"""Insert never writes through a link planted in a store: a store whose files are links out (or FIFOs) is refused
with an error that says what to do, before anything is written; and a trajectory whose pool documents fail is not
left in the catalog either (no half state)."""

from __future__ import annotations

import os
import sqlite3

import pytest
from click.testing import CliRunner

from runbook.errors import DiskFull, UnsafeStoreFile
from runbook.ingest import insert_paths
from runbook.pools import insert_listener
from runbook.pools.storage import read_manifest
from tests.conftest import make_trajectory, write_jsonl


@pytest.fixture
def filled(store, tmp_path):
    first = [make_trajectory(f"t-{n}", 3, start=5 * n) for n in range(3)]
    insert_paths(store, [write_jsonl(tmp_path / "first.jsonl", first)], listeners=[insert_listener(store)], workers=1)
    return store


@pytest.fixture
def more(tmp_path):
    return write_jsonl(tmp_path / "more.jsonl", [make_trajectory(f"new-{n}", 4, start=30 + n) for n in range(9)])


@pytest.fixture
def host_file(tmp_path):
    path = tmp_path / "host" / "precious.txt"
    path.parent.mkdir()
    path.write_bytes(b"precious host data\n" * 1263)  # 24,000 bytes, as in the issue
    return path


def _state(store) -> tuple:
    """What an insert must leave alone when it is refused: catalog rows, trajectory folders, the pools' manifest
    (its stamp and cuts aside: an undone commit takes a new stamp and records the documents it took back, so that
    no cached segment of the undone one is used)."""
    manifest = read_manifest(store.layout.pools)
    return (
        [row.id for row in store.rows()],
        sorted(p.name for p in store.layout.trajectories.iterdir()),
        {key: value for key, value in manifest.items() if key not in ("stamp", "cuts")},
    )


def _plant_link(path, target) -> None:
    if path.exists() or path.is_symlink():
        path.unlink()
    os.symlink(target, path)


@pytest.mark.parametrize("planted", ["pools/terms.txt", "pools/slices/docs.jsonl", "pools/notes/note.post"])
def test_an_insert_into_a_store_with_a_pool_file_linked_out_is_refused_before_writing(filled, more, host_file, planted):
    before, content = _state(filled), host_file.read_bytes()
    _plant_link(filled.root / planted, host_file)
    with pytest.raises(UnsafeStoreFile, match=rf"{planted}.*symbolic link.*runbook store check"):
        insert_paths(filled, [more], listeners=[insert_listener(filled)], workers=1)
    assert host_file.read_bytes() == content, "the host file was written through the link"
    assert _state(filled)[:2] == before[:2], "the catalog or the trajectories changed"


def test_a_lock_linked_to_a_missing_path_creates_nothing_there(filled, more, tmp_path):
    target = tmp_path / "elsewhere" / "created-by-runbook"
    target.parent.mkdir()
    _plant_link(filled.layout.lock, target)
    before = _state(filled)
    with pytest.raises(UnsafeStoreFile, match=r"\.lock.*symbolic link"):
        insert_paths(filled, [more], listeners=[insert_listener(filled)], workers=1)
    assert not target.exists()
    assert _state(filled) == before


def test_a_catalog_linked_out_or_a_fifo_is_refused(filled, more, tmp_path):
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).close()
    before_size = other.stat().st_size
    (filled.layout.catalog).rename(tmp_path / "catalog.sqlite")
    _plant_link(filled.layout.catalog, other)
    with pytest.raises(UnsafeStoreFile, match="catalog.sqlite"):
        insert_paths(filled, [more], listeners=[insert_listener(filled)], workers=1)
    with pytest.raises(UnsafeStoreFile, match="catalog.sqlite"):
        filled.rows()  # readers refuse it too
    assert other.stat().st_size == before_size
    filled.layout.catalog.unlink()
    os.mkfifo(filled.layout.catalog)
    with pytest.raises(UnsafeStoreFile, match="catalog.sqlite.*FIFO"):
        insert_paths(filled, [more], listeners=[insert_listener(filled)], workers=1)


def test_the_cli_says_what_is_wrong_and_what_to_do(filled, more, host_file):
    from runbook.cli import main

    _plant_link(filled.root / "pools" / "terms.txt", host_file)
    result = CliRunner().invoke(main, ["--store", str(filled.root), "insert", str(more)])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
    assert "pools/terms.txt" in result.output and "runbook reindex" in result.output
    assert host_file.read_bytes() == b"precious host data\n" * 1263


def test_a_planted_pool_file_is_repaired_by_reindex(filled, more, host_file):
    from runbook.pools.build import reindex

    _plant_link(filled.root / "pools" / "terms.txt", host_file)
    reindex(filled, workers=1)
    assert not (filled.root / "pools" / "terms.txt").is_symlink()
    insert_paths(filled, [more], listeners=[insert_listener(filled)], workers=1)
    assert len(filled.rows()) == 12
    assert host_file.read_bytes() == b"precious host data\n" * 1263


class FailingListener:
    """A listener whose derived data cannot be built (as a pool write that fails)."""

    def __init__(self, fail_on: str):
        self.fail_on = fail_on

    def __call__(self, store, staged, status: str) -> None:
        if staged.trajectory_id == self.fail_on:
            raise OSError(28, "No space left on device")


def test_a_failed_pool_build_leaves_the_catalog_as_it_was(filled, more):
    before = _state(filled)
    with pytest.raises(DiskFull, match="is full"):  # the OSError, said as what to do
        insert_paths(filled, [more], listeners=[insert_listener(filled), FailingListener("new-0")], workers=1)
    assert _state(filled) == before  # new-0 is neither in the catalog nor in the pools nor on disk


def test_a_failed_pool_build_on_replace_puts_the_old_version_back(filled, tmp_path):
    changed = write_jsonl(tmp_path / "changed.jsonl", [make_trajectory("t-1", 5, goal="Another goal")])
    before = _state(filled)
    with pytest.raises(DiskFull):
        insert_paths(
            filled, [changed], replace=True, listeners=[insert_listener(filled), FailingListener("t-1")], workers=1
        )
    assert _state(filled) == before
    assert filled.row("t-1").n_states == 3 and filled.load("t-1").goal == "Find the price"
    assert filled.read_state("t-1", 2)[0]["state"].startswith("2 of 3")
