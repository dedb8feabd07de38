"""`runbook store check` names every link, FIFO, socket and device planted in a store, and passes a clean one."""

from __future__ import annotations

import json
import os
import socket

from click.testing import CliRunner

from runbook.cli import main
from runbook.ingest import insert_paths
from runbook.pools import insert_listener
from tests.conftest import make_trajectory, write_jsonl


def _filled(store, tmp_path):
    source = write_jsonl(tmp_path / "a.jsonl", [make_trajectory(f"t-{n}", 3) for n in range(2)])
    insert_paths(store, [source], listeners=[insert_listener(store)], workers=1)
    return store


def test_a_clean_store_passes(store, tmp_path):
    _filled(store, tmp_path)
    result = CliRunner().invoke(main, ["--store", str(store.root), "store", "check"])
    assert result.exit_code == 0, result.output
    assert "regular files and folders only" in result.output


def test_every_planted_link_fifo_and_socket_is_named(store, tmp_path, monkeypatch):
    _filled(store, tmp_path)
    (tmp_path / "host").mkdir()
    os.symlink("/etc/passwd", store.root / "pools" / "terms.txt.planted")
    state = store.state_path("t-0", 1)
    state.unlink()
    os.symlink(tmp_path / "host", state)
    os.mkfifo(store.state_path("t-1", 2).with_name("0009.md"))
    folder = store.trajectory_dir("t-1") / "screenshots"
    os.symlink(tmp_path / "host", folder)
    sock = socket.socket(socket.AF_UNIX)
    monkeypatch.chdir(store.root / "summaries")  # a relative name: a socket's path must be short
    sock.bind("listening")
    try:
        result = CliRunner().invoke(main, ["--store", str(store.root), "store", "check", "--json"])
    finally:
        sock.close()
    assert result.exit_code == 1
    found = {entry["path"]: entry["kind"] for entry in json.loads(result.output)["unsafe"]}
    assert found == {
        "pools/terms.txt.planted": "a symbolic link to /etc/passwd",
        "trajectories/t-0/states/0001.md": f"a symbolic link to {tmp_path / 'host'}",
        "trajectories/t-1/states/0009.md": "a FIFO",
        "trajectories/t-1/screenshots": f"a symbolic link to {tmp_path / 'host'}",
        "summaries/listening": "a socket",
    }
    text = CliRunner().invoke(main, ["--store", str(store.root), "store", "check"])
    assert text.exit_code == 1 and "5 file(s)" in text.output
    assert "trajectories/t-1/states/0009.md: a FIFO" in text.output
