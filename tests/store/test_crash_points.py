"""kill -9 of insert, close and reindex at random points (a fixed seed): after every kill the store opens, `runbook
store check` is clean after that open (and named what a walk of the store found left before it), no reader saw a
trajectory whose catalog rows did not commit, and nothing committed is lost; at the end a last run of each
completes the store.

Each operation runs in a forked child that counts the file system and catalog calls it makes (os.replace, rename,
unlink, mkdir, rmdir, open, write, fsync, ftruncate, io.open, and the catalog connection's execute, commit and
transaction exit) and kills itself with SIGKILL at the k-th; k is drawn from the number of calls a whole run of that
operation made, so the kills land anywhere in it, between the pools' commit and the catalog's included. The child
reports each commit it finished through a pipe, so the test knows what was committed before the kill.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from runbook.cli import main
from runbook.core import pools as core_pools
from runbook.core.grep import ripgrep_binary
from runbook.core.layout import STATE_GLOB
from runbook.ingest import insert_paths
from runbook.pools import insert_listener, reindex
from runbook.pools.search import Retriever
from runbook.serve.service import MemoryService
from runbook.store import Store
from runbook.store.check import unsafe_entries
from runbook.store.recovery import find_leftovers, read_fingerprint
from runbook.store.staging import fingerprint
from tests.conftest import make_trajectory, write_jsonl
from tests.store.crash import report_commits, run_in_child

SEED = 33
KILLS = 54
"""At least this many runs end in a kill (the issue asks for 50 or more in CI)."""
MAX_ROUNDS = 160


class Model:
    """What the store must hold: every committed version's fingerprint, per id."""

    def __init__(self) -> None:
        self.committed: dict[str, str] = {}
        self.in_flight: dict[str, str] = {}
        """The versions the operation under way writes: each may have committed just before the kill."""

    def allowed(self, trajectory_id: str) -> set[str]:
        return {fp for fp in (self.committed.get(trajectory_id), self.in_flight.get(trajectory_id)) if fp}


def _trajectory(tid: str, version: int):
    page = "\n".join(f"\t[{i}] gridcell 'order {tid} row {i} total {version * 10 + i}'" for i in range(40))
    traj = make_trajectory(tid, 3, texts=[page] * 3)
    traj.goal = f"Find the totals of {tid}, version {version}"
    return traj


def check_no_reader_sees_uncommitted(root: Path, model: Model) -> None:
    """Before anything recovers the store: the catalog's rows, and what a reader of the files sees (ripgrep lists
    the state files as the sandbox's `search` does; the summaries), hold committed versions only."""
    store = Store(root, recover=False)
    rows = {row.dir: row for row in store.rows()}
    listed = subprocess.run(
        [ripgrep_binary(), "--no-config", "--no-ignore", "--files", "-g", STATE_GLOB, "trajectories"],
        cwd=root,
        capture_output=True,
        text=True,
    )
    folders = {Path(line).parts[1] for line in listed.stdout.splitlines()}
    folders |= {name for name in os.listdir(root / "trajectories") if not name.startswith(".")}
    for name in folders:
        row = rows.get(name)
        assert row is not None, f"trajectories/{name} is visible but its catalog rows never committed"
        assert read_fingerprint(store.layout, root / "trajectories" / name) in model.allowed(row.id) | {
            row.fingerprint
        }, name
    table = root / "summaries" / "trajectories.tsv"
    if table.exists():
        ids = {line.split("\t")[1] for line in table.read_text().splitlines()[1:] if line}
        assert ids <= {row.id for row in rows.values()}


STRAY = re.compile(r"\..+\.tmp\d+-[0-9a-f]{8}|pools\.(tmp|old)-.*|\.dirty")
"""Names only a writer at work has: a whole-file write's temporary file, a reindex's pools, the writer's mark."""


def stray_files(root: Path, committed: set[str]) -> list[str]:
    """Every file or folder of the store that no finished writer leaves, found by walking the store (not by the
    code under test): `store check` must name each of these, and the next open remove it."""
    found = []
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            rel = os.path.relpath(os.path.join(folder, name), root)
            in_trajectories = folder == str(root / "trajectories")
            if STRAY.fullmatch(name) or (in_trajectories and name not in committed):  # staged, pending, trash
                found.append(rel)
            elif folder == str(root / ".open") and name.startswith(".tmp-"):  # an open trajectory half created
                found.append(rel)
        dirs[:] = [d for d in dirs if folder != str(root / "trajectories")]  # a trajectory's own files: its own
    return found


def check_after_open(root: Path, model: Model, reported: list[dict]) -> None:
    """The store opens (and recovers); then `store check` finds nothing, nothing a stopped writer left is on disk,
    every committed trajectory reads whole, and method R's pools hold only committed versions."""
    for line in reported:
        model.committed[line["commit"]] = line["fingerprint"]
    store = Store(root)
    rows = store.rows()
    assert not store.writing()
    assert find_leftovers(store.layout, rows) == []
    assert unsafe_entries(store.layout) == []
    checked = CliRunner().invoke(main, ["--store", str(root), "store", "check", "--json"])  # as a user runs it
    assert checked.exit_code == 0 and json.loads(checked.output)["leftovers"] == [], checked.output
    assert stray_files(root, {row.dir for row in rows}) == []
    ids = {row.id: row.fingerprint for row in rows}
    for tid in model.committed:
        assert ids.get(tid) in model.allowed(tid), f"committed trajectory {tid} lost or wrong after the kill"
    for row in rows:
        assert row.fingerprint in model.allowed(row.id), row.id
        found = store.load_committed(row.id)
        assert found is not None and len(found[1].states) == 3
        model.committed[row.id] = row.fingerprint
    manifest = core_pools.read_manifest(store.layout.pools)
    assert set(manifest["trajectories"]) <= set(ids)
    assert all(ids.get(tid) == fp for tid, fp in core_pools.undo_fingerprints(manifest).items())
    hits = Retriever(store).find("order totals row", 4000)
    assert {hit.trajectory_id for hit in hits.slices} <= set(ids)


def test_kill_9_at_random_points_of_insert_close_and_reindex(tmp_path):
    rng = random.Random(SEED)
    root = tmp_path / "store"
    Store(root, create=True)
    model = Model()
    counter = iter(range(10**6))
    estimates: dict[str, int] = {}
    kills, leftovers_seen = 0, 0

    def insert_op() -> Callable[[], None]:
        n = next(counter)
        trajectories = [_trajectory(f"n{n}-a", 0), _trajectory(f"n{n}-b", 0)]
        if model.committed:
            trajectories.append(_trajectory(rng.choice(sorted(model.committed)), n + 1))  # a replace
        model.in_flight = {t.id: fingerprint(t)[0] for t in trajectories}
        source = write_jsonl(tmp_path / f"in-{n}.jsonl", trajectories)

        def run() -> None:
            report_commits()
            store = Store(root)
            insert_paths(store, [source], replace=True, listeners=[insert_listener(store)], workers=1)

        return run

    def close_op() -> Callable[[], None]:
        n = next(counter)
        tid = f"s{n}"
        service = MemoryService(root, screenshot_root=tmp_path)
        service.open_trajectory(tid, goal=f"Stream {tid}", site="shop")
        steps = _trajectory(tid, 0).states
        for state in steps:
            service.append_state(tid, {"url": state.url, "accessibility_tree": state.text, "action": state.action})
        closing = service._trajectory(service.journal.get(tid))
        model.in_flight = {tid: fingerprint(closing)[0]}

        def run() -> None:
            report_commits()
            MemoryService(root, screenshot_root=tmp_path).close_trajectory(tid)

        return run

    def reindex_op() -> Callable[[], None]:
        model.in_flight = {}
        return lambda: reindex(Store(root), workers=1)

    operations = {"insert": insert_op, "close": close_op, "reindex": reindex_op}
    for name, make in operations.items():  # a whole run of each first: how many calls a run makes
        killed, calls, reported = run_in_child(make(), None)
        assert not killed and calls > 0
        estimates[name] = calls
        check_no_reader_sees_uncommitted(root, model)
        check_after_open(root, model, reported)
        _finish_streams(root, tmp_path, model)

    for _round in range(MAX_ROUNDS):
        if kills >= KILLS:
            break
        name = rng.choice(sorted(operations))
        target = rng.randint(1, estimates[name])
        killed, calls, reported = run_in_child(operations[name](), target)
        kills += killed
        if not killed:
            estimates[name] = max(estimates[name], calls)
        check_no_reader_sees_uncommitted(root, model)
        store = Store(root, recover=False)
        found = find_leftovers(store.layout, store.rows())
        leftovers_seen += bool(found)
        stray = stray_files(root, {row.dir for row in store.rows()})
        assert not stray or found, f"store check found nothing, but a kill left {stray}"
        check_after_open(root, model, reported)
        _finish_streams(root, tmp_path, model)
    assert kills >= KILLS, f"only {kills} runs were killed in {MAX_ROUNDS} rounds"
    assert leftovers_seen >= kills // 2, "store check should have found what most kills left"

    for make in operations.values():  # and the same operations, run to the end, complete the store
        killed, _calls, reported = run_in_child(make(), None)
        assert not killed
        check_after_open(root, model, reported)
        _finish_streams(root, tmp_path, model)
    final = {row.id: row.fingerprint for row in Store(root).rows()}
    assert final == model.committed


def _finish_streams(root: Path, tmp_path: Path, model: Model) -> None:
    """A close killed before its commit leaves the trajectory open: it closes again (as a client would retry)."""
    service = MemoryService(root, screenshot_root=tmp_path)
    for tid in service.journal.ids():
        assert service.close_trajectory(tid)["status"] in ("inserted", "unchanged")
        row = service.store.row(tid)
        assert row is not None and row.fingerprint in model.allowed(tid)
        model.committed[tid] = row.fingerprint
    assert service.journal.ids() == []


@pytest.fixture(autouse=True)
def _no_stray_children():
    yield
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass
