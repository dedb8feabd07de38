"""A query's sandbox never outlives it: not after success, not after an error, not after SIGTERM or SIGINT."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import TEST_LIMITS  # noqa: E402  (tests/sandbox/conftest.py)

from runbook.sandbox import get_sandbox

REPO = Path(__file__).resolve().parents[2]

QUERY_SCRIPT = """
import sys
from runbook.sandbox import get_sandbox
backend, store = sys.argv[1], sys.argv[2]
with get_sandbox(backend, store, memory_mb=128) as box:
    handle = box.container_id if backend == "docker" else box.jail_id
    print("READY", handle, flush=True)
    box.exec("sleep 60", timeout=120)
print("FINISHED", flush=True)
"""


def gone(backend: str, handle: str, engine=None) -> bool:
    if backend == "docker":
        import docker.errors

        try:
            engine.client.containers.get(handle)
            return False
        except docker.errors.NotFound:
            return True
    from runbook.sandbox.cgroup import find

    if find(handle):
        return False  # the jail's cgroup is still there
    # no jail process still names this query's jail (its init has the name on its command line)
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if handle.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                return False
        except OSError:
            continue
    return True


def handle_of(box) -> str:
    return box.container_id if box.name == "docker" else box.jail_id


def engine_for(backend, request):
    return request.getfixturevalue("docker_engine")[0] if backend == "docker" else None


def test_nothing_left_after_a_query(backend, tiny_store, request):
    engine = engine_for(backend, request)
    with get_sandbox(backend, tiny_store, **TEST_LIMITS) as box:
        assert box.exec("true", timeout=10).ok
        handle = handle_of(box)
        assert not gone(backend, handle, engine)
    assert gone(backend, handle, engine)


def test_nothing_left_after_a_failed_query(backend, tiny_store, request):
    engine = engine_for(backend, request)
    with pytest.raises(RuntimeError):
        with get_sandbox(backend, tiny_store, **TEST_LIMITS) as box:
            handle = handle_of(box)
            box.exec("exit 3", timeout=10)
            raise RuntimeError("the agent crashed")
    assert gone(backend, handle, engine)


def interruptible() -> None:
    """SIGINT as at a terminal: a test run started in the background (`cmd &`) inherits it ignored, and Python then
    never raises KeyboardInterrupt, so Ctrl-C could not be tested."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_nothing_left_after_a_killed_query(backend, tiny_store, request, sig):
    engine = engine_for(backend, request)
    proc = subprocess.Popen(
        [sys.executable, "-c", QUERY_SCRIPT, backend, str(tiny_store)],
        cwd=REPO,
        preexec_fn=interruptible,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        line = proc.stdout.readline()
        assert line.startswith("READY"), line + proc.stderr.read()
        handle = line.split(None, 1)[1].strip()
        time.sleep(0.5)  # let the exec call start: the signal lands while the query waits on it
        proc.send_signal(sig)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "FINISHED" not in proc.stdout.read()
    deadline = time.monotonic() + 10
    while not gone(backend, handle, engine) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert gone(backend, handle, engine), f"{backend} sandbox {handle} outlived its query"


@pytest.mark.docker
def test_leftover_of_a_dead_owner_is_reaped(docker_engine, tiny_store):
    """A container whose owner was SIGKILLed (no cleanup possible) is removed by the next sandbox start."""
    from runbook.sandbox.docker import LABEL

    engine = docker_engine[0]
    proc = subprocess.Popen(
        [sys.executable, "-c", QUERY_SCRIPT, "docker", str(tiny_store)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    handle = proc.stdout.readline().split(None, 1)[1].strip()
    proc.kill()
    proc.wait()
    container = engine.client.containers.get(handle)
    assert container.labels[LABEL] == "1"
    with get_sandbox("docker", tiny_store, engine=engine, **TEST_LIMITS):
        pass
    assert gone("docker", handle, engine)


@pytest.mark.bwrap
def test_a_bwrap_query_killed_with_sigkill_leaves_nothing(bwrap_ready, tiny_store, tmp_path, monkeypatch):
    """kill -9 allows no cleanup: the jail dies with its owner, and the next start removes what it left."""
    import tempfile

    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-c", QUERY_SCRIPT, "bwrap", str(tiny_store)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(tmpdir)},
    )
    line = proc.stdout.readline()
    assert line.startswith("READY"), line + proc.stderr.read()
    handle = line.split(None, 1)[1].strip()
    proc.kill()
    proc.wait()
    from runbook.sandbox.cgroup import find

    left = find(handle)  # the cgroup outlives its owner: only the next start can remove it
    monkeypatch.setenv("TMPDIR", str(tmpdir))
    monkeypatch.setattr(tempfile, "tempdir", None)
    with get_sandbox("bwrap", tiny_store, **TEST_LIMITS):
        pass
    deadline = time.monotonic() + 10
    while not gone("bwrap", handle) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert gone("bwrap", handle), f"bwrap sandbox {handle} outlived its owner"
    assert list(tmpdir.iterdir()) == []
    assert all(not folder.exists() for folder in left)
