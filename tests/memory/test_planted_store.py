"""Every method over a store with links and FIFOs planted in it: no host file reaches a context, and no query hangs
on a FIFO. The host reads store files only through the store's safe-read path; the sandbox's programs skip what is
not a regular file, as the host does (method C with FIFO state files took 61 s: one tool call's timeout)."""

from __future__ import annotations

import logging
import os
import time

import pytest

from runbook.ingest import insert_paths
from runbook.memory import get_memory
from runbook.pools import insert_listener
from tests.conftest import make_trajectory, sandbox_missing, write_jsonl

SECRET = "HOST-SECRET-77e1 the root password is hunter2"
QUESTION = "What price does the admin list for the Quest Lumaflex Band?"
PAGE = "RootWebArea 'Edit Product'\n\t[900] textbox 'Price' value='$24.00'\n\tStaticText 'Quest Lumaflex Band'"


@pytest.fixture
def planted(store, tmp_path):
    """Four trajectories that all show the price; then a state file linked to a host file, three state files (R's
    best hit among them) and the action summary replaced by FIFOs, and the trajectory table linked out."""
    runs = [
        make_trajectory(f"wa-admin-{n}", 3, texts=[PAGE] * 3, goal="Check the Lumaflex price", start=10 * n)
        for n in range(4)
    ]
    insert_paths(store, [write_jsonl(tmp_path / "a.jsonl", runs)], listeners=[insert_listener(store)], workers=1)
    host = tmp_path / "host"
    host.mkdir()
    (host / "secret.md").write_text(f"trajectory: wa-admin-0\nstate: 1 of 3\n---\n{SECRET}\n{PAGE}\n")
    (host / "table.tsv").write_text(f"seq\tid\n1\t{SECRET}\n")
    linked = store.state_path("wa-admin-0", 1)
    linked.unlink()
    os.symlink(host / "secret.md", linked)
    for fifo in (
        store.state_path("wa-admin-0", 0),
        store.state_path("wa-admin-1", 0),
        store.state_path("wa-admin-2", 2),
    ):
        fifo.unlink()
        os.mkfifo(fifo)
    summaries = store.layout.summaries
    (summaries / "actions.txt").unlink()
    os.mkfifo(summaries / "actions.txt")
    (summaries / "trajectories.tsv").unlink()
    os.symlink(host / "table.tsv", summaries / "trajectories.tsv")
    for path in [tmp_path, *tmp_path.rglob("*")]:  # the sandbox user (not the owner) reads the store
        if not path.is_symlink():
            path.chmod(0o755 if path.is_dir() else 0o644)
    return store


def _backend(name: str, request) -> str:
    if name == "docker":
        from runbook.errors import SandboxError
        from runbook.sandbox.engine import connect
        from runbook.sandbox.image import ensure_image

        try:
            ensure_image(connect())
        except SandboxError as exc:
            sandbox_missing(f"no docker sandbox here: {exc}")
    else:
        from runbook.sandbox.select import bwrap_works

        ok, why = bwrap_works()
        if not ok:
            sandbox_missing(why)
    return name


@pytest.mark.timeout(180)
@pytest.mark.parametrize(
    "method, sandbox",
    [
        ("r", None),
        ("bm25", None),
        ("full", None),
        ("none", None),
        ("c", "docker"),
        ("c", "bwrap"),
        ("auto", "bwrap"),
    ],
)
def test_no_method_shows_a_planted_file_or_hangs_on_a_fifo(planted, clean_env, caplog, request, method, sandbox):
    options = {"sandbox": _backend(sandbox, request)} if sandbox else {}
    memory = get_memory(method, planted, **options)
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="runbook"):
        context = memory.query(QUESTION, budget=100_000 if method == "full" else 4000)
    seconds = time.monotonic() - started
    rendered = context.to_markdown() + context.to_json_text()
    assert "HOST-SECRET" not in rendered
    assert seconds < 30, f"{method} took {seconds:.1f} s: a FIFO was waited on"
    if method != "none":
        assert any("Lumaflex" in item.text for item in context.items), "the other states still answer"
    if method == "full":  # every trajectory is shown, the planted states left out with a warning each
        assert {item.trajectory_id for item in context.items} == {f"wa-admin-{n}" for n in range(4)}
        warnings = [record.getMessage() for record in caplog.records]
        assert sum("symbolic link" in w for w in warnings) == 1
        assert sum("not a regular file" in w for w in warnings) == 3
