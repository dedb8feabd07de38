"""Method C kept warm on the real Docker engine: each query gets a container of its own, started ahead, and none is
left once the memory is closed."""

from __future__ import annotations

import os

import pytest

from runbook.memory.coding_agent import CodingAgentMemory
from runbook.pools.build import insert_with_pools
from runbook.sandbox.docker import LABEL
from runbook.sandbox.engine import connect
from runbook.store import Store
from tests.conftest import make_trajectory

pytestmark = pytest.mark.docker


def running_containers(engine) -> set[str]:
    """This process's sandbox containers (other test runs may share the engine)."""
    return {
        c["Id"]
        for c in engine.client.api.containers(all=True, filters={"label": f"{LABEL}=1"})
        if (c.get("Labels") or {}).get("runbook.owner_pid") == str(os.getpid())
    }


@pytest.fixture
def store(tmp_path) -> Store:
    store = Store(tmp_path / "store", create=True)
    insert_with_pools(store, make_trajectory("wa-admin-1", 3, texts=["'Dashboard'", "'Catalog'", "'Price' $24.00"]))
    for path in [tmp_path, store.root, *store.root.rglob("*")]:  # the sandbox user reads the store
        path.chmod(0o755 if path.is_dir() else 0o644)
    return store


def test_warm_queries_each_get_their_own_container_and_close_leaves_none(docker_engine, store, clean_env):
    engine = connect()
    before = running_containers(engine)
    memory = CodingAgentMemory(store, sandbox="docker", warm=True)
    contexts = [memory.query("What price does the page show?", budget=2000) for _ in range(2)]
    assert all(c.meta["sandbox"] == "docker" and c.meta["finished"] for c in contexts)
    # the spare for the next query, and at most the last query's own, still being removed in the background
    assert 1 <= len(running_containers(engine) - before) <= 2
    memory.close()
    assert running_containers(engine) - before == set()
