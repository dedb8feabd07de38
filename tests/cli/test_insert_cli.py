"""`runbook insert` / `stats` through the real CLI: summaries, bad input left out whole, kill -9 mid-insert."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from runbook.cli import main
from runbook.store import Store
from tests.conftest import make_trajectory, write_jsonl


def run(store, *args):
    return CliRunner().invoke(main, ["--store", str(store), *args], catch_exceptions=False)


def store_snapshot(root):
    """Every file under the store with its size: 'the store exactly as it was'."""
    if not root.exists():
        return None
    return sorted(
        (str(p.relative_to(root)), p.stat().st_size)
        for p in root.rglob("*")
        if p.is_file() and not p.name.startswith("catalog.sqlite-")
    )


def test_insert_then_stats(tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl", [make_trajectory("a"), make_trajectory("b")])
    result = run(tmp_path / "s", "insert", str(src))
    assert result.exit_code == 0, result.output
    assert "2 inserted, 0 unchanged, 0 refused, 6 states" in result.output
    again = run(tmp_path / "s", "insert", str(src))
    assert "0 inserted, 2 unchanged" in again.output
    stats = json.loads(run(tmp_path / "s", "stats", "--json").output)
    assert (stats["trajectories"], stats["states"], stats["screenshots"]) == (2, 6, 0) and stats["tokens"] > 0
    assert stats["per_site"]["shop"]["trajectories"] == 2


def test_gzip_and_folder_input(tmp_path):
    folder = tmp_path / "runs"
    folder.mkdir()
    with gzip.open(folder / "a.jsonl.gz", "wt") as fh:
        fh.write(json.dumps(make_trajectory("g1").to_dict()) + "\n")
    write_jsonl(folder / "b.jsonl", [make_trajectory("g2")])
    (folder / "notes.txt").write_text("not a trajectory")
    result = run(tmp_path / "s", "insert", str(folder))
    assert result.exit_code == 0 and "2 inserted" in result.output


BAD_CASES = {
    "malformed JSON": ('{"id": "x", "states": [', "in.jsonl:2", "malformed JSON"),
    "missing field": (json.dumps({"id": "nostates", "goal": "g"}), "nostates", "'states'"),
    "mistyped field": (
        json.dumps({"id": "typed", "states": [{"state_index": 0, "url": 5.5j if False else ["x"]}]}),
        "typed",
        "states[0].url",
    ),
    "missing screenshot": (
        json.dumps({"id": "shot", "states": [{"state_index": 0, "screenshot": "nope.png"}]}),
        "shot",
        "states[0].screenshot",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_bad_input_names_file_trajectory_field_and_leaves_store_unchanged(tmp_path, case):
    line, where, field = BAD_CASES[case]
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps(make_trajectory("good").to_dict()) + "\n" + line + "\n")
    store = tmp_path / "s"
    run(store, "insert", str(write_jsonl(tmp_path / "seed.jsonl", [make_trajectory("seed")])))
    before = store_snapshot(store)
    result = run(store, "insert", str(src))
    assert result.exit_code != 0
    assert str(src) in result.output and where in result.output and field in result.output
    assert "nothing was inserted" in result.output
    assert store_snapshot(store) == before


def test_skip_invalid_inserts_the_valid_ones_and_still_fails(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps(make_trajectory("good").to_dict()) + "\n{broken\n")
    result = run(tmp_path / "s", "insert", "--skip-invalid", str(src))
    assert result.exit_code != 0 and "1 inserted" in result.output and "invalid:" in result.output
    assert [r.id for r in Store(tmp_path / "s").rows()] == ["good"]


def test_empty_file_and_unknown_format(tmp_path):
    (tmp_path / "empty.jsonl").write_text("")
    (tmp_path / "data.csv").write_text("a,b\n")
    for name, message in (("empty.jsonl", "empty"), ("data.csv", "unknown trajectory format")):
        result = run(tmp_path / "s", "insert", str(tmp_path / name))
        assert result.exit_code == 1 and name in result.output and message in result.output


def test_conflict_refused_without_replace(tmp_path):
    run(tmp_path / "s", "insert", str(write_jsonl(tmp_path / "a.jsonl", [make_trajectory("x")])))
    changed = write_jsonl(tmp_path / "b.jsonl", [make_trajectory("x", goal="other")])
    refused = run(tmp_path / "s", "insert", str(changed))
    assert refused.exit_code == 1 and "refused" in refused.output and "--replace" in refused.output
    assert run(tmp_path / "s", "insert", "--replace", str(changed)).exit_code == 0
    assert Store(tmp_path / "s").load("x").goal == "other"


def test_kill_9_during_insert_keeps_committed_trajectories_and_rerun_completes(tmp_path):
    # large page texts make each trajectory slow enough to kill the writer in the middle of the file
    page = "\n".join(f"\t[{i}] gridcell 'row {i} value {i * 7}'" for i in range(1500))
    trajs = [make_trajectory(f"k{i:03d}", n=4, texts=[page] * 4) for i in range(60)]
    src = write_jsonl(tmp_path / "big.jsonl", trajs)
    root = tmp_path / "s"
    cmd = [sys.executable, "-m", "runbook.cli", "--store", str(root), "insert", str(src), "--workers", "2"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while time.time() < deadline:
        if (root / "runbook.json").exists() and len(Store(root)) >= 5:
            break
        time.sleep(0.05)
    workers = _children(proc.pid)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.time() + 5
    while time.time() < deadline and any(_alive(pid) for pid in workers):
        time.sleep(0.1)
    assert workers and not any(_alive(pid) for pid in workers), "the killed writer's workers must exit too"
    store = Store(root)
    committed = [r.id for r in store.rows()]
    assert 5 <= len(committed) < 60, "the kill should land mid-insert"
    for tid in committed:  # every committed trajectory opens whole
        assert len(store.load(tid).states) == 4
        assert store.read_state(tid, 3)[1].startswith("\t[0] gridcell")
    rerun = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert f"{60 - len(committed)} inserted, {len(committed)} unchanged" in rerun.stdout
    names = sorted(p.name for p in (root / "trajectories").iterdir())
    assert names == sorted(t.id for t in trajs)


def _children(pid: int) -> list[int]:
    """Process ids whose parent is `pid` (from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry))
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def store_bytes(root):
    """Every file under the store with its bytes: 'byte-identical', stricter than store_snapshot."""
    return sorted(
        (str(p.relative_to(root)), p.read_bytes())
        for p in root.rglob("*")
        if p.is_file() and not p.name.startswith("catalog.sqlite-")
    )


def _shot_case(tmp_path, case: str) -> str:
    """The screenshot value of one attack, with what it needs on disk."""
    from PIL import Image

    (tmp_path / "private").mkdir()
    secret = tmp_path / "private" / "secret.png"
    Image.new("RGB", (3, 3), "white").save(secret)
    secret.chmod(0o600)
    src = tmp_path / "src"
    if case == "dot-dot":
        return "../../../../../../../../../etc/passwd"
    if case == "absolute":
        return str(secret)
    if case == "symlink out":
        os.symlink(secret, src / "link.png")
        return "link.png"
    if case == "fifo":
        os.mkfifo(src / "pipe.png")
        return "pipe.png"
    if case == "not an image":
        (src / "fake.png").write_text("root:x:0:0:root:/root:/bin/bash\n")
        return "fake.png"
    if case == "nul":
        return "a.png\u0000/../../etc/passwd"
    raise AssertionError(case)


@pytest.mark.parametrize("case", ["dot-dot", "absolute", "symlink out", "fifo", "not an image", "nul"])
def test_a_screenshot_from_outside_or_not_an_image_is_refused_and_the_store_is_byte_identical(tmp_path, case):
    (tmp_path / "src").mkdir()
    shot = _shot_case(tmp_path, case)
    bad = {
        "id": "evil",
        "states": [{"state_index": 0, "url": "http://a/"}, {"state_index": 1, "url": "http://a/b", "screenshot": shot}],
    }
    src = tmp_path / "src" / "in.jsonl"
    src.write_text(json.dumps(make_trajectory("good").to_dict()) + "\n" + json.dumps(bad) + "\n")
    store = tmp_path / "s"
    run(store, "insert", str(write_jsonl(tmp_path / "seed.jsonl", [make_trajectory("seed")])))
    before = store_bytes(store)
    result = run(store, "insert", str(src))
    assert result.exit_code == 1
    assert f"{src}:2" in result.output and "'evil'" in result.output and "states[1].screenshot" in result.output
    assert "nothing was inserted" in result.output
    assert store_bytes(store) == before


def test_screenshot_root_lets_a_source_name_images_kept_elsewhere(tmp_path):
    from PIL import Image

    shots = tmp_path / "shots"
    shots.mkdir()
    Image.new("RGB", (3, 3), "white").save(shots / "a.png")
    doc = {"id": "kept", "states": [{"state_index": 0, "url": "http://a/", "screenshot": str(shots / "a.png")}]}
    (tmp_path / "src").mkdir()
    src = tmp_path / "src" / "in.jsonl"
    src.write_text(json.dumps(doc) + "\n")
    refused = run(tmp_path / "s", "insert", str(src))
    assert refused.exit_code == 1 and "--screenshot-root" in refused.output
    result = run(tmp_path / "s", "insert", "--screenshot-root", str(shots), str(src))
    assert result.exit_code == 0, result.output
    assert (tmp_path / "s" / "trajectories" / "kept" / "screenshots" / "0000.png").read_bytes() == (
        shots / "a.png"
    ).read_bytes()
