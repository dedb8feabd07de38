"""Shared fixtures: small real-shaped trajectories written by the tests, and the path of the shared data."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from runbook.store import Store
from runbook.trajectory import State, Trajectory

SHARED_ENV = "SHARED_DATA"
"""Where the real data is when it is not at ../shared/data (the variable ../shared/tools read too)."""
SHARED_DATA = Path(os.environ.get(SHARED_ENV) or Path(__file__).resolve().parents[1].parent / "shared" / "data")
"""The WebArena and Infinity sets and the dev questions (see the README's "Tests that read the real data")."""
SHARED_TOOLS = SHARED_DATA.parent / "tools"


def make_trajectory(
    tid: str = "t-1",
    n: int = 3,
    *,
    site: str = "shop",
    goal: str = "Find the price",
    start: int = 0,
    texts: list[str] | None = None,
    outcome: str = "success (reward 1.0)",
) -> Trajectory:
    states = []
    for i in range(n):
        states.append(
            State(
                index=i,
                url=f"http://localhost:7770/page/{i}",
                title=f"Page {i}",
                text=(texts[i] if texts else f"RootWebArea 'Page {i}'\n\t[1{i}] link 'Item {i}'"),
                action=f"click('1{i}')" if i < n - 1 else "send_msg_to_user('done')",
                action_error="TimeoutError: Locator.click" if i == 1 else "",
                thought=f"step {i}\nsecond line",
                timestamp=f"2025-12-16T06:{start + i:02d}:00.000Z",
            )
        )
    return Trajectory(id=tid, states=states, goal=goal, site=site, start_url=states[0].url, outcome=outcome)


def write_jsonl(path: Path, trajectories: list[Trajectory]) -> Path:
    path.write_text("".join(json.dumps(t.to_dict()) + "\n" for t in trajectories))
    return path


ORDER_PAGE = "RootWebArea 'Orders'\n\tgridcell 'order status pending'\n\tgridcell 'order total shipping address'\n"


def order_runs_store(folder: Path, extra: Sequence[Trajectory] = (), runs: int = 12):
    """A store with pools of `runs` runs whose pages all match questions about an order's status and total well
    (method R's context fills any budget with them), and the `extra` runs."""
    from runbook.ingest import insert_paths
    from runbook.pools import insert_listener
    from runbook.store import Store

    store = Store(folder / "store", create=True)
    trajectories = [
        make_trajectory(f"wa-orders-{n}", 3, texts=[ORDER_PAGE * 3] * 3, goal="Check the order status", start=n)
        for n in range(runs)
    ]
    source = write_jsonl(folder / "runs.jsonl", [*trajectories, *extra])
    insert_paths(store, [source], listeners=[insert_listener(store)], workers=1)
    return store


ALLOW_SKIP_ENV = "RUNBOOK_TEST_ALLOW_SKIP"
"""Set to 1 to let sandbox tests skip on a machine that cannot run them; otherwise a missing engine is a failure,
so the README's test command never passes with the isolation tests silently skipped."""


def sandbox_missing(what: str) -> None:
    """Fail (the default, and always in CI) or skip when `what` sandbox prerequisite is missing."""
    allowed = os.environ.get(ALLOW_SKIP_ENV) == "1" and os.environ.get("CI", "").lower() != "true"
    if not allowed:
        pytest.fail(
            f"{what}. The sandbox tests must run: start the engine with "
            f'`eval "$(bash scripts/docker-engine.sh)"`, install bubblewrap and debootstrap '
            f"(bash scripts/install.sh), or set {ALLOW_SKIP_ENV}=1 to skip them on this machine"
        )
    pytest.skip(what)


@pytest.fixture
def store(tmp_path) -> Store:
    return Store(tmp_path / "store", create=True)


def require_shared(what: Path = SHARED_DATA) -> Path:
    """`what` (the shared data, or a part of it such as its tools) when it is there. Missing, the test fails in CI
    (CI=true), so that CI never passes with the real-data tests skipped, and is skipped on a developer's clone."""
    if not what.exists():
        message = (
            f"{what} is not there: the tests that read the real data need ../shared/data beside the repository "
            f"or {SHARED_ENV}=/path/to/shared/data (the README's 'Tests that read the real data' says how to get it)"
        )
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return what


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    """No keys or runbook settings from the machine (so the default policy is offline); transcripts in tmp_path."""
    from runbook.config import CONFIG_ENV, SETTINGS

    for setting in SETTINGS:
        monkeypatch.delenv(setting.env, raising=False)
    monkeypatch.delenv(CONFIG_ENV, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("RUNBOOK_TRANSCRIPTS", str(tmp_path / "transcripts"))


def shared_runs(*ids: str) -> dict[str, dict]:
    """The real trajectories with these ids, as the shared data sets hold them (JSON objects), read in one pass."""
    import gzip

    wanted, out = set(ids), {}
    for name in ("webarena", "infinity"):
        with gzip.open(require_shared() / name / "trajectories.jsonl.gz", "rt", encoding="utf-8") as fh:
            for line in fh:
                tid = line[8 : line.index('"', 8)] if line.startswith('{"id": "') else json.loads(line)["id"]
                if tid in wanted:
                    out[tid] = json.loads(line)
                    if len(out) == len(wanted):
                        return out
    assert len(out) == len(wanted), sorted(wanted - set(out))
    return out
