"""Method R and the BM25 baseline never show a host file that a link planted in the store points to: the baseline
skips state files that are links (with a warning); method R reads pages only from its pools, built at insert."""

from __future__ import annotations

import logging
import os

import pytest

from runbook.ingest import insert_paths
from runbook.memory import get_memory
from runbook.pools import insert_listener
from tests.conftest import make_trajectory, write_jsonl

SECRET = "HOST-SECRET-4f1c hunter2 Lumaflex"
QUESTION = "What is the price of the Quest Lumaflex Band?"
PAGE = "RootWebArea 'Edit Product'\n\t[900] textbox 'Price' value='$24.00'\n\tStaticText 'Quest Lumaflex Band'"


@pytest.fixture
def filled(store, tmp_path):
    trajectories = [
        make_trajectory(f"wa-admin-{n}", 2, texts=[PAGE, PAGE], goal="Check the Lumaflex price", start=10 * n)
        for n in range(3)
    ]
    insert_paths(
        store, [write_jsonl(tmp_path / "a.jsonl", trajectories)], listeners=[insert_listener(store)], workers=1
    )
    host = tmp_path / "host"
    host.mkdir()
    (host / "secret.md").write_text(f"trajectory: wa-admin-0\n---\n{SECRET}\n" * 5)
    return store


def _plant(store, tmp_path, where: str) -> None:
    """Replace a state file, a states/ folder or a trajectory folder by a link to host files with the secret."""
    host = tmp_path / "host"
    folder = store.trajectory_dir("wa-admin-0")
    if where == "state file":
        target, link = host / "secret.md", folder / "states" / "0000.md"
        link.unlink()
    else:
        link = folder / "states" if where == "states folder" else folder
        target = host / "copy"
        os.rename(link, target)
        for state in target.rglob("*.md") if where == "trajectory folder" else target.glob("*.md"):
            state.write_text((host / "secret.md").read_text())
    os.symlink(target, link)


@pytest.mark.parametrize("method", ["r", "bm25"])
@pytest.mark.parametrize("where", ["state file", "states folder", "trajectory folder"])
def test_a_planted_symlink_never_reaches_the_context(filled, tmp_path, caplog, method, where):
    _plant(filled, tmp_path, where)
    with caplog.at_level(logging.WARNING, logger="runbook"):
        context = get_memory(method, filled).query(QUESTION, budget=4000)
    rendered = context.to_markdown() + context.to_json_text()
    assert "HOST-SECRET" not in rendered
    assert context.items, "the other trajectories still answer"
    if method == "bm25":  # it reads state files, and says which one it left out
        assert any("symbolic link" in record.getMessage() for record in caplog.records)


def test_a_planted_pool_file_is_refused_with_what_to_run(filled, tmp_path):
    import shutil

    from runbook.errors import UnsafeStoreFile
    from runbook.pools.build import reindex

    docs = filled.layout.pools / "notes" / "docs.jsonl"
    forged = tmp_path / "host" / "docs.jsonl"
    forged.write_text(docs.read_text().replace("Lumaflex", "HOSTSECR"))  # same length: within the manifest's size
    docs.unlink()
    os.symlink(forged, docs)
    shutil.rmtree(filled.layout.pools / "cache", ignore_errors=True)
    with pytest.raises(UnsafeStoreFile, match="runbook reindex"):
        get_memory("r", filled).query(QUESTION, budget=4000)
    reindex(filled, workers=1)
    assert "HOSTSECR" not in get_memory("r", filled).query(QUESTION, budget=4000).to_json_text()
