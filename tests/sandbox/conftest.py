"""Sandbox fixtures: a tiny store, and backends that FAIL when their engine is missing (skipped only where
RUNBOOK_TEST_ALLOW_SKIP=1 says so, never in CI)."""

from __future__ import annotations

from pathlib import Path

import pytest

from runbook.errors import SandboxError
from tests.conftest import sandbox_missing as missing

TEST_LIMITS = dict(memory_mb=128, pids=64, output_bytes=4_000, scratch_mb=16)
"""Small limits so the hog and bomb tests finish fast."""


@pytest.fixture(scope="session")
def docker_engine():
    from runbook.sandbox.engine import connect
    from runbook.sandbox.image import ensure_image

    try:
        engine = connect()
    except SandboxError as exc:
        missing(f"no Docker engine: {exc}")
    try:
        image = ensure_image(engine)
    except SandboxError as exc:
        missing(f"cannot build the sandbox image: {exc}")
    return engine, image


@pytest.fixture(scope="session")
def bwrap_ready() -> None:
    from runbook.sandbox.select import bwrap_works

    ok, why = bwrap_works()
    if not ok:
        missing(why)


@pytest.fixture
def tiny_store(tmp_path) -> Path:
    """Two small files, world-readable like a real store (the sandbox user is not the owner)."""
    store = tmp_path / "store"
    (store / "trajectories" / "t-1" / "states").mkdir(parents=True)
    (store / "trajectories" / "t-1" / "states" / "0000.md").write_text("url: http://shop/cart\nCheckout button\n")
    (store / "runbook.json").write_text('{"format": 1}\n')
    for path in [store, *store.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    tmp_path.chmod(0o755)  # so a bwrap jail running as nobody can reach the bind source
    return store


@pytest.fixture(
    params=[pytest.param("docker", marks=pytest.mark.docker), pytest.param("bwrap", marks=pytest.mark.bwrap)]
)
def backend(request) -> str:
    request.getfixturevalue("docker_engine" if request.param == "docker" else "bwrap_ready")
    return request.param


@pytest.fixture
def make_box(backend, tiny_store, request):
    """make_box(**limits) -> a started sandbox of the parametrized backend over tiny_store, stopped after the test."""
    from runbook.sandbox import get_sandbox

    boxes = []

    def make(store: Path | None = None, **limits):
        options = {**TEST_LIMITS, **limits}
        if backend == "docker":  # no pinned image: tools/ may change during the run, the sandbox rebuilds then
            options.update(engine=request.getfixturevalue("docker_engine")[0])
        box = get_sandbox(backend, store or tiny_store, **options).start()
        boxes.append(box)
        return box

    yield make
    for box in boxes:
        box.stop()
