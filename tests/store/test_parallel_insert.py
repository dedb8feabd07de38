"""An insert with staging workers writes the same store as one without: the same catalog rows in the same order,
the same files byte for byte (state files, trajectories, pools, summaries), so the parallel path is as atomic and
exact as the serial one; and the pools read the same without numpy (the sandbox's programs) as with it."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

from runbook import ingest
from runbook.ingest import insert_paths
from runbook.pools import insert_listener
from runbook.store import Store
from tests.conftest import make_trajectory, write_jsonl

SAMPLE = Path(__file__).resolve().parents[2] / "trajectories"
VOLATILE = ("catalog.sqlite", ".lock", "pools/cache/", "runbook.json")  # times, and caches built per stamp


def _insert(root: Path, workers: int) -> Store:
    store = Store(root, create=True)
    report = insert_paths(store, [SAMPLE], workers=workers, listeners=[insert_listener(store)])
    assert report.ok and report.inserted == 8
    return store


def _rows(root: Path) -> list[tuple]:
    conn = sqlite3.connect(root / "catalog.sqlite")
    try:
        trajectories = conn.execute(
            "SELECT id, dir, site, goal, outcome, n_states, n_screenshots, n_errors, tokens, bytes, first_ts, last_ts, "
            "fingerprint FROM trajectories ORDER BY rowid"
        ).fetchall()
        states = conn.execute("SELECT * FROM states ORDER BY trajectory_id, state_index").fetchall()
    finally:
        conn.close()
    return trajectories + states


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not any(str(p.relative_to(root)).startswith(v) for v in VOLATILE)
    }


def test_parallel_insert_writes_what_the_serial_one_writes(tmp_path):
    serial, parallel = tmp_path / "serial", tmp_path / "parallel"
    _insert(serial, workers=1)
    _insert(parallel, workers=2)
    assert _rows(serial) == _rows(parallel)
    one, two = _files(serial), _files(parallel)
    assert sorted(one) == sorted(two)
    differing = [name for name in one if one[name] != two[name]]
    assert not differing, f"files that differ between a serial and a parallel insert: {differing}"


def test_workers_started_before_validation_write_the_same_and_a_refused_run_nothing(tmp_path, monkeypatch):
    # a large input starts its staging workers while the sources are validated (ingest.EARLY_START_BYTES)
    monkeypatch.setattr(ingest, "EARLY_START_BYTES", 0)
    serial, early = tmp_path / "serial", tmp_path / "early"
    _insert(serial, workers=1)
    store = _insert(early, workers=2)
    assert _rows(serial) == _rows(early) and _files(serial) == _files(early)
    bad = write_jsonl(tmp_path / "bad.jsonl", [make_trajectory("new-one")])
    bad.write_text(bad.read_text() + '{"id": "broken", "states": [\n')
    report = insert_paths(store, [bad], workers=2, listeners=[insert_listener(store)])
    assert not report.ok and report.inserted == 0 and len(report.invalid) == 1
    assert _rows(serial) == _rows(early) and _files(serial) == _files(early)  # nothing was written


def test_pools_read_the_same_without_numpy(tmp_path):
    """The sandbox's rbplan reads slice documents and page records without importing numpy."""
    store = _insert(tmp_path / "s", workers=1)
    code = (
        "import sys, json\n"
        "sys.modules['numpy'] = None  # any import of numpy fails\n"
        "from runbook.core.pools import PoolSnapshot\n"
        f"snap = PoolSnapshot({str(store.root / 'pools')!r})\n"
        "docs = snap.docs('slices')\n"
        "print(json.dumps([[d['t'], d['i']] for d in docs]))\n"
        "print(json.dumps([[b.text for b in snap.page(n)[1].blocks] for n in range(len(docs))]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    from runbook.core.pools import PoolSnapshot

    snap = PoolSnapshot(store.root / "pools")
    docs = snap.docs("slices")
    assert out[0] == __import__("json").dumps([[d["t"], d["i"]] for d in docs])
    assert out[1] == __import__("json").dumps([[b.text for b in snap.page(n)[1].blocks] for n in range(len(docs))])
