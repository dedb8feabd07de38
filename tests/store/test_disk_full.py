"""A disk that fills up under `runbook insert`: a real tmpfs of 6 MB (in a mount namespace of the test's own, so
nothing shows on the host) runs out of space midway. The insert exits 1 with one error naming the store, the space
left and about how much more it needs (it was an OSError traceback); the store opens with every committed
trajectory whole; with room made, the next open leaves nothing behind and the same command completes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

from tests.conftest import make_trajectory, sandbox_missing, write_jsonl

INSIDE = r"""
import json, subprocess, sys
from pathlib import Path

disk, source = Path(sys.argv[1]), sys.argv[2]
subprocess.run(["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", str(disk)], check=True)
store = disk / "store"
command = [sys.executable, "-m", "runbook.cli", "--store", str(store), "insert", source, "--workers", "1"]
first = subprocess.run(command, capture_output=True, text=True)

from runbook.store import Store
from runbook.store.recovery import find_leftovers

opened = Store(store)
committed = [row.id for row in opened.rows()]
whole = [len(opened.load(t).states) for t in committed]
subprocess.run(["mount", "-o", "remount,size=128m", str(disk)], check=True)  # room made
reopened = Store(store)
left = [str(x) for x in find_leftovers(reopened.layout, reopened.rows())]
second = subprocess.run(command, capture_output=True, text=True)
print(json.dumps({
    "first": [first.returncode, first.stdout, first.stderr], "committed": committed, "whole": whole,
    "left": left, "second": [second.returncode, second.stdout, second.stderr], "total": len(Store(store)),
}))
"""


def test_a_full_disk_is_said_and_a_rerun_completes(tmp_path):
    if shutil.which("unshare") is None:
        sandbox_missing("unshare (util-linux) is not installed: the full-disk test mounts a small tmpfs with it")
    page = "\n".join(f"\t[{i}] gridcell 'order {i:05d} shipped to customer {i * 7:07d}'" for i in range(1200))
    source = write_jsonl(tmp_path / "in.jsonl", [make_trajectory(f"t{n:02d}", 3, texts=[page] * 3) for n in range(30)])
    (tmp_path / "disk").mkdir()
    done = subprocess.run(
        ["unshare", "--mount", "--map-root-user", sys.executable, "-c", INSIDE, str(tmp_path / "disk"), str(source)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    code, _stdout, stderr = out["first"]
    assert code == 1 and "Traceback" not in stderr, stderr
    assert f"error: the disk holding the store at {tmp_path / 'disk' / 'store'} is full (" in stderr
    assert "MB free; it needs about" in stderr and "run the same command again" in stderr
    assert 0 < len(out["committed"]) < 30, "the disk should fill up midway"
    assert out["whole"] == [3] * len(out["committed"])
    assert out["left"] == []
    code, stdout, stderr = out["second"]
    assert code == 0, stderr
    assert f"{30 - len(out['committed'])} inserted, {len(out['committed'])} unchanged" in stdout
    assert out["total"] == 30
