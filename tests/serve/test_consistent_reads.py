"""A reader of the service sees one committed version of a trajectory, and a close is atomic as a client sees it.

A replace renames the new folder in before its catalog row commits: a GET in between once answered the old row's
n_states 1 beside the new file's 2 states. A close held every reader of open trajectories while it wrote, after
which one that had looked for the row too early answered 404; a close whose write failed after the commit left
the trajectory stored but listed as open."""

from __future__ import annotations

import threading

import pytest

from runbook.pools.build import PoolListener
from runbook.serve import MemoryService
from runbook.store.writer import StoreWriter


@pytest.fixture
def service(tmp_path, clean_env):
    service = MemoryService(tmp_path / "store", create=True, write_timeout=60)
    yield service
    service.close()


def _step(i: int) -> dict:
    return {"url": f"http://shop/p/{i}", "accessibility_tree": f"RootWebArea 'Order {300 + i}'"}


def _paused_commit(monkeypatch, thread: str = "writer"):
    """Pause a writer's commit after its folder is renamed in and its pools are written, before its rows commit."""
    reached, resume = threading.Event(), threading.Event()
    listener_call = PoolListener.__call__

    def pausing(self, store, staged, status):
        listener_call(self, store, staged, status)
        if threading.current_thread().name == thread:
            reached.set()
            resume.wait(60)

    monkeypatch.setattr(PoolListener, "__call__", pausing)
    return reached, resume


def _writer_paused_at_commit(monkeypatch, work, *args) -> tuple[threading.Thread, threading.Event]:
    """`work(*args)` running on a thread named "writer", held at its commit (_paused_commit); set the event to let
    it finish."""
    reached, resume = _paused_commit(monkeypatch)
    writer = threading.Thread(target=work, args=args, name="writer")
    writer.start()
    assert reached.wait(60)
    return writer, resume


def test_a_get_during_a_replace_reads_one_version(service, monkeypatch):
    service.open_trajectory("live-1", visible="step", goal="Cancel order 305")
    service.append_state("live-1", _step(0))
    assert service.settle(60)
    reached, resume = _paused_commit(monkeypatch, thread="runbook-step-inserts")  # the re-insert after a step
    service.append_state("live-1", _step(1))
    assert reached.wait(60)
    seen: dict = {}
    reader = threading.Thread(target=lambda: seen.update(service.trajectory("live-1")))
    reader.start()
    reader.join(0.5)  # it waits for the commit, or reads the version before it: never half of each
    resume.set()
    assert service.settle(60)
    reader.join(60)
    assert seen["n_states"] == len(seen["states"]) == [s["state_index"] for s in seen["states"]][-1] + 1
    state = service.state("live-1", 1)
    assert "Order 301" in state["text"]


def test_a_close_is_open_until_it_returns_then_stored(service, monkeypatch):
    service.open_trajectory("run-1", goal="Cancel order 305")
    service.append_state("run-1", _step(0))
    closer, resume = _writer_paused_at_commit(monkeypatch, service.close_trajectory, "run-1")
    during = service.trajectory("run-1")  # answered at once: the close does not hold readers up
    stats = service.stats()
    resume.set()
    closer.join(60)
    assert during["open"] is True and stats["open_trajectories"] == 1
    after = service.trajectory("run-1")
    assert after["open"] is False and after["n_states"] == 1 and service.stats()["open_trajectories"] == 0


def test_a_close_that_fails_after_its_commit_is_closed(service, monkeypatch):
    service.open_trajectory("run-2", goal="Cancel order 305")
    service.append_state("run-2", _step(0))

    real_close = StoreWriter.close

    def close_then_fail(self, render=True):
        real_close(self, render)  # committed, summaries rendered, caches built
        raise EOFError("what a cache read once raised after the commit")

    monkeypatch.setattr(StoreWriter, "close", close_then_fail)
    service.close_trajectory("run-2")  # committed: the client is told it is closed
    assert service.trajectory("run-2")["open"] is False
    assert service.stats()["open_trajectories"] == 0


def test_a_close_that_fails_before_its_commit_stays_open(service, monkeypatch):
    service.open_trajectory("run-3", goal="Cancel order 305")
    service.append_state("run-3", _step(0))
    listener_call = PoolListener.__call__

    def failing(self, store, staged, status):
        raise OSError("disk full")

    monkeypatch.setattr(PoolListener, "__call__", failing)
    with pytest.raises(OSError):
        service.close_trajectory("run-3")
    assert service.trajectory("run-3")["open"] is True and service.store.row("run-3") is None
    monkeypatch.setattr(PoolListener, "__call__", listener_call)
    assert service.close_trajectory("run-3")["status"] == "inserted"  # closed on a second try
    assert service.trajectory("run-3")["open"] is False


def test_a_close_refuses_further_steps_while_it_writes(service, monkeypatch):
    from runbook.serve.service import NotFound

    service.open_trajectory("run-4", goal="x")
    service.append_state("run-4", _step(0))
    closer, resume = _writer_paused_at_commit(monkeypatch, service.close_trajectory, "run-4")
    with pytest.raises(NotFound, match="being closed"):
        service.append_state("run-4", _step(1))
    with pytest.raises(NotFound, match="being closed"):
        service.close_trajectory("run-4")
    resume.set()
    closer.join(60)
    assert service.store.row("run-4").n_states == 1
