"""The store: layout, idempotent atomic insert, conflicts, replace, recovery, catalog and summaries."""

from __future__ import annotations

import os
import sqlite3

import pytest

from runbook.errors import StoreError
from runbook.ingest import insert_paths
from runbook.store import Store
from runbook.store.layout import trajectory_dirname
from tests.conftest import make_trajectory, write_jsonl


def test_insert_writes_grep_friendly_state_files(store):
    with store.writer() as w:
        assert w.insert(make_trajectory("wa-shop-1")).status == "inserted"
    text = (store.root / "trajectories/wa-shop-1/states/0001.md").read_text()
    header, _, body = text.partition("\n---\n")
    assert "trajectory: wa-shop-1" in header and "state: 1 of 3" in header
    assert "url: http://localhost:7770/page/1" in header
    assert "thought: step 1 ⏎ second line" in header  # one line per field, so a grep hit shows it whole
    assert "error: TimeoutError: Locator.click" in header
    assert body.startswith("RootWebArea 'Page 1'")
    fields, page = store.read_state("wa-shop-1", 1)
    assert fields["thought"] == "step 1\nsecond line" and page.startswith("RootWebArea")


def test_same_trajectory_twice_is_unchanged_and_different_content_is_refused(store):
    with store.writer() as w:
        w.insert(make_trajectory("a"))
        assert w.insert(make_trajectory("a")).status == "unchanged"
        refused = w.insert(make_trajectory("a", goal="another goal"))
    assert refused.status == "refused" and "--replace" in refused.message
    assert store.load("a").goal == "Find the price"


def test_replace_overwrites_and_moves_to_the_end_of_insertion_order(store):
    with store.writer() as w:
        w.insert(make_trajectory("a"))
        w.insert(make_trajectory("b"))
        assert w.insert(make_trajectory("a", goal="new goal"), replace=True).status == "replaced"
    assert [r.id for r in store.rows()] == ["b", "a"]
    assert store.load("a").goal == "new goal"
    assert not any(p.name.startswith(".") for p in (store.root / "trajectories").iterdir())


def test_catalog_records_order_times_and_counts(store):
    with store.writer() as w:
        w.insert(make_trajectory("late", start=30))
        w.insert(make_trajectory("early", start=0))
    rows = store.rows()
    assert [r.id for r in rows] == ["late", "early"] and rows[0].seq < rows[1].seq
    assert rows[0].first_ts == "2025-12-16T06:30:00.000Z" and rows[0].last_ts == "2025-12-16T06:32:00.000Z"
    assert rows[0].n_states == 3 and rows[0].n_errors == 1 and rows[0].success == 1 and rows[0].tokens > 0
    with sqlite3.connect(store.layout.catalog) as conn:
        assert conn.execute("SELECT count(*) FROM states").fetchone()[0] == 6


def test_summaries_list_every_trajectory_and_its_actions(store):
    with store.writer() as w:
        w.insert(make_trajectory("a", goal="Cancel order 12"))
    table = (store.root / "summaries/trajectories.tsv").read_text().splitlines()
    assert table[0].startswith("seq\tid") and "Cancel order 12" in table[1]
    actions = (store.root / "summaries/actions.txt").read_text()
    assert "## a | shop | success (reward 1.0) | 3 states" in actions and "click('10')" in actions
    assert "!! TimeoutError" in actions


def test_screenshots_are_copied_and_fingerprinted_by_content(tmp_path, store):
    from PIL import Image

    shot = tmp_path / "src" / "s0.png"
    shot.parent.mkdir()
    Image.new("RGB", (8, 8), "red").save(shot)
    traj = make_trajectory("s", n=1)
    traj.states[0].screenshot = str(shot)
    with store.writer() as w:
        w.insert(traj)
        copy = tmp_path / "elsewhere.png"
        copy.write_bytes(shot.read_bytes())
        traj.states[0].screenshot = str(copy)
        assert w.insert(traj).status == "unchanged"  # same pixels from another path
        Image.new("RGB", (8, 8), "blue").save(copy)
        assert w.insert(traj).status == "refused"
    assert (store.root / "trajectories/s/screenshots/0000.png").exists()
    assert store.load("s").states[0].screenshot.endswith("trajectories/s/screenshots/0000.png")


def test_unsafe_ids_get_safe_distinct_folders(store):
    with store.writer() as w:
        w.insert(make_trajectory("a/b c"))
        w.insert(make_trajectory("a_b c"))
    dirs = {r.dir for r in store.rows()}
    assert len(dirs) == 2 and all("/" not in d and " " not in d for d in dirs)
    assert trajectory_dirname("../x") != "../x"


def test_recovery_removes_what_a_killed_writer_left(store):
    with store.writer() as w:
        w.insert(make_trajectory("kept"))
    base = store.root / "trajectories"
    (base / ".tmp-half-123").mkdir()
    (base / "renamed-but-not-committed").mkdir()
    with store.writer():
        pass
    assert sorted(p.name for p in base.iterdir()) == ["kept"]
    assert store.load("kept").id == "kept"


def test_missing_store_is_a_clear_error(tmp_path):
    with pytest.raises(StoreError, match="runbook insert"):
        Store(tmp_path / "nothing")


def test_insert_paths_with_two_workers_keeps_input_order(tmp_path, store):
    src = write_jsonl(tmp_path / "in.jsonl", [make_trajectory(f"t{i}", start=i) for i in range(12)])
    report = insert_paths(store, [src], workers=2)
    assert report.inserted == 12 and report.ok
    assert [r.id for r in store.rows()] == [f"t{i}" for i in range(12)]
    again = insert_paths(store, [src], workers=2)
    assert again.unchanged == 12 and again.inserted == 0
    assert not any(p.name.startswith(".tmp-") for p in (store.root / "trajectories").iterdir())


def test_concurrent_writers_are_serialised(tmp_path):
    import subprocess
    import sys

    root = tmp_path / "store"
    Store(root, create=True)
    srcs = [write_jsonl(tmp_path / f"in{k}.jsonl", [make_trajectory(f"p{k}-{i}") for i in range(15)]) for k in range(3)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "runbook.cli", "--store", str(root), "insert", str(s), "--workers", "1"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for s in srcs
    ]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    assert len(Store(root)) == 45


def _shot_trajectory(tmp_path, tid="swap"):
    from PIL import Image

    shot = tmp_path / "src" / "s0.png"
    shot.parent.mkdir(exist_ok=True)
    Image.new("RGB", (8, 8), "red").save(shot)
    traj = make_trajectory(tid, n=1)
    traj.states[0].screenshot = str(shot)
    return traj, shot


def test_a_screenshot_swapped_for_a_symlink_after_validation_is_not_copied(tmp_path, store):
    from runbook.errors import InputError

    traj, shot = _shot_trajectory(tmp_path)
    secret = tmp_path / "secret.txt"
    secret.write_text("root-only secret")
    shot.unlink()
    os.symlink(secret, shot)  # what a reader checked is now a link to something else
    with pytest.raises(InputError, match=r"states\[0\]\.screenshot"), store.writer() as w:
        w.insert(traj)
    assert store.row("swap") is None
    assert not any("root-only secret" in p.read_text(errors="replace") for p in store.root.rglob("*") if p.is_file())


def test_a_screenshot_whose_folder_was_swapped_for_a_symlink_is_not_copied(tmp_path, store):
    from PIL import Image

    from runbook.errors import InputError

    traj, shot = _shot_trajectory(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    Image.new("RGB", (8, 8), "blue").save(elsewhere / "s0.png")
    os.rename(shot.parent, tmp_path / "moved")
    os.symlink(elsewhere, shot.parent)
    with pytest.raises(InputError, match="symbolic link"), store.writer() as w:
        w.insert(traj)
    assert store.row("swap") is None


def test_a_screenshot_replaced_by_a_non_image_is_not_copied(tmp_path, store):
    from runbook.errors import InputError

    traj, shot = _shot_trajectory(tmp_path)
    shot.write_text("not an image any more")
    with pytest.raises(InputError, match="not an image"), store.writer() as w:
        w.insert(traj)
    assert store.row("swap") is None
