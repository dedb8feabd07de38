"""The `recall` program: method R's ranking over the pools, the same on the host and inside the docker and bwrap
sandboxes (the store mounted read-only, the pools' indexes prebuilt at insert)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from runbook.ingest import insert_paths
from runbook.pools import Retriever, insert_listener
from runbook.sandbox.sources import programs_dir
from runbook.store import Store
from tests.conftest import make_trajectory, write_jsonl

QUESTION = "What price does the grid show for the Desiree Fitness Tee?"


@pytest.fixture(scope="module")
def pooled_store(tmp_path_factory):
    """Three small runs, one of them about the question, inserted with their pools; readable by any user."""
    base = tmp_path_factory.mktemp("recall")
    texts = [
        "RootWebArea 'Products'\n\tgridcell 'Desiree Fitness Tee'\n\tgridcell '$24.00'",
        "RootWebArea 'Edit Product'\n\ttextbox 'Price' value='$24.00'",
        "RootWebArea 'Saved'\n\tStaticText 'You saved the product.'",
    ]
    runs = [
        make_trajectory("run-tee", 3, texts=texts, goal="Set the price of the Desiree Fitness Tee"),
        make_trajectory("run-cart", 3, start=10, goal="Check the shopping cart"),
        make_trajectory("run-order", 3, start=20, goal="Cancel an order"),
    ]
    store = Store(base / "store", create=True)
    insert_paths(store, [write_jsonl(base / "in.jsonl", runs)], listeners=[insert_listener(store)])
    for path in [base, *base.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return store


def host_ids(store: Store) -> list[str]:
    found = Retriever(store).recall.find(QUESTION)
    return [h.id for h in found.notes[:3]] + [h.id for h in found.events[:5]] + [h.id for h in found.slices[:10]]


def recall_json(output: str) -> dict:
    return json.loads(output.strip().splitlines()[-1])


def printed_ids(result: dict) -> list[str]:
    return [h["id"] for pool in ("notes", "events", "states") for h in result[pool]]


def test_recall_on_the_host_prints_r_s_ranking_with_provenance(pooled_store):
    env = {**os.environ, "PYTHONPATH": str(programs_dir()), "RUNBOOK_STORE_DIR": str(pooled_store.root)}
    proc = subprocess.run(
        [sys.executable, str(programs_dir() / "recall"), QUESTION, "--json"], capture_output=True, text=True, env=env
    )
    assert proc.returncode == 0, proc.stderr
    result = recall_json(proc.stdout)
    assert printed_ids(result) == host_ids(pooled_store)
    top = result["states"][0]
    assert top["trajectory_id"] == "run-tee" and top["url"].startswith("http://localhost:7770/page/")
    assert top["timestamp"] and top["pool"] == "slices" and isinstance(top["state_index"], int)
    text = subprocess.run(
        [sys.executable, str(programs_dir() / "recall"), QUESTION], capture_output=True, text=True, env=env
    ).stdout
    assert text.startswith("# recall ") and "## states" in text and "[s" in text and "run-tee state" in text


def test_recall_says_what_to_do_when_the_store_has_no_pools(tmp_path):
    store = Store(tmp_path / "bare", create=True)
    insert_paths(store, [write_jsonl(tmp_path / "in.jsonl", [make_trajectory("t-1")])])  # no pool listener
    env = {**os.environ, "PYTHONPATH": str(programs_dir()), "RUNBOOK_STORE_DIR": str(store.root)}
    proc = subprocess.run(
        [sys.executable, str(programs_dir() / "recall"), "price"], capture_output=True, text=True, env=env
    )
    assert proc.returncode == 2 and "runbook reindex" in proc.stderr


def test_recall_in_the_sandbox_matches_the_host(make_box, pooled_store):
    box = make_box(pooled_store.root)
    result = box.exec(["recall", QUESTION, "--json"], timeout=60)
    assert result.ok, result.output
    assert printed_ids(recall_json(result.output)) == host_ids(pooled_store)
