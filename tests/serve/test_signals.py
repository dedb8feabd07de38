"""SIGTERM and SIGHUP end `runbook serve http` and `runbook serve mcp` as Ctrl-C does: the warm docker sandbox is
removed and the server's `runbook-serve-*` folder with it (SIGTERM used to kill both servers on the spot, leaving
them; SIGHUP still did to `serve http`, item 11 of issue 33), with a line saying so and exit code 0 (it printed
click's `Aborted!`). A port in use is an error before any start-up line (item 9 of issue 34)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from runbook.ingest import insert_paths
from runbook.pools import insert_listener
from runbook.store import Store
from tests.conftest import make_trajectory, sandbox_missing, write_jsonl
from tests.serve.test_http import free_port

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def served_store(tmp_path) -> Path:
    store = Store(tmp_path / "store", create=True)
    source = write_jsonl(tmp_path / "a.jsonl", [make_trajectory(f"t-{n}", 3, start=5 * n) for n in range(3)])
    insert_paths(store, [source], listeners=[insert_listener(store)], workers=1)
    for path in [store.root, *store.root.rglob("*")]:  # the sandbox user reads the store (it is not the owner)
        path.chmod(0o755 if path.is_dir() else 0o644)
    return store.root


def _start(tmp_path: Path, store: Path, *command: str, stdin=None) -> tuple[subprocess.Popen, Path]:
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(tmpdir), "RUNBOOK_SANDBOX": "docker"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "runbook.cli", "--store", str(store), "serve", *command],
        cwd=REPO,
        env=env,
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        # a server started under `nohup` ignores SIGHUP, as it should; a test run under nohup must not pass that on
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL),
    )
    return proc, tmpdir


def _stop(proc: subprocess.Popen, sig: int = signal.SIGTERM) -> str:
    """Send `sig`, wait for the server to end; its stderr."""
    proc.send_signal(sig)
    try:
        return proc.communicate(timeout=60)[1].decode()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _containers_of(pid: int) -> list:
    from runbook.errors import SandboxError
    from runbook.sandbox.docker import LABEL
    from runbook.sandbox.engine import connect

    try:
        client = connect().client
    except SandboxError as exc:
        sandbox_missing(f"no Docker engine: {exc}")
    # sparse: as listed, not inspected one by one (a used container removed in the background meanwhile was a 404)
    labels = [f"{LABEL}=1", f"runbook.owner_pid={pid}"]
    return client.containers.list(all=True, sparse=True, filters={"label": labels})


@pytest.mark.docker
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_stop_signal_on_serve_http_removes_the_warm_container_and_the_temporary_folder(tmp_path, served_store, sig):
    port = free_port()
    proc, tmpdir = _start(tmp_path, served_store, "http", "--port", str(port))
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.stderr.read().decode()
            try:
                if httpx.get(f"http://127.0.0.1:{port}/stats", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.2)
        answer = httpx.post(
            f"http://127.0.0.1:{port}/query",
            json={"question": "Where is Item 1?", "budget": "1k", "method": "c"},
            timeout=120,
        )
        assert answer.status_code == 200, answer.text
        assert [p.name for p in tmpdir.iterdir() if p.name.startswith("runbook-serve-")]
        assert _containers_of(proc.pid), "method C keeps its next docker sandbox started"
    finally:
        log = _stop(proc, sig)
    assert proc.returncode == 0 and f"runbook serve stopped ({sig.name})" in log and "Aborted!" not in log, log
    deadline = time.monotonic() + 30  # a used container is removed in the background: allow it a moment
    while _containers_of(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _containers_of(proc.pid) == []
    assert list(tmpdir.iterdir()) == []


def test_sigterm_on_serve_mcp_removes_the_temporary_folder(tmp_path, served_store):
    proc, tmpdir = _start(tmp_path, served_store, "mcp", stdin=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not list(tmpdir.iterdir()):
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline, "the MCP server did not start"
            time.sleep(0.1)
        time.sleep(1.0)  # let it reach its stdio loop
    finally:
        log = _stop(proc)
    assert list(tmpdir.iterdir()) == []
    assert proc.returncode == 0 and "runbook serve stopped (SIGTERM)" in log and "Aborted!" not in log, log


@pytest.mark.parametrize("kind", ["http", "mcp"])
def test_a_port_in_use_is_an_error_before_any_start_up_line(tmp_path, served_store, kind):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        args = [kind, *(["--transport", "http"] if kind == "mcp" else []), "--port", str(port)]
        proc, tmpdir = _start(tmp_path, served_store, *args)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err
    assert f"error: cannot serve on 127.0.0.1:{port}: Address already in use" in err.decode()
    assert "runbook serve" not in err.decode() and "Traceback" not in err.decode()
    assert list(tmpdir.iterdir()) == []
