"""The service's limits: one writer at a time with a bounded wait, a cap on method C's sandboxes."""

from __future__ import annotations

import time

import pytest

from runbook.serve import BusyError, MemoryService


@pytest.fixture
def service(tmp_path, clean_env):
    service = MemoryService(tmp_path / "store", create=True, write_timeout=0.3, max_sandboxes=1, sandbox_wait=0.3)
    yield service
    service.close()


def test_a_second_writer_waits_then_gets_a_clear_error(service):
    service._writer.acquire()  # another insert holds the store
    try:
        start = time.monotonic()
        with pytest.raises(BusyError, match="another insert held the store"):
            service.insert({"id": "t-1", "states": [{"url": "http://shop/a"}]})
        assert 0.25 < time.monotonic() - start < 5
    finally:
        service._writer.release()
    assert service.insert({"id": "t-1", "states": [{"url": "http://shop/a"}]})["status"] == "inserted"


def test_excess_sandbox_queries_wait_then_fail_clearly(service):
    service.insert({"id": "t-1", "states": [{"url": "http://shop/a", "accessibility_tree": "'Reports'"}]})
    service._sandboxes.acquire()  # every sandbox is busy
    try:
        with pytest.raises(BusyError, match="every sandbox stayed busy.*method 'r'"):
            service.query("Where is the report?", budget=1000, method="c")
    finally:
        service._sandboxes.release()


def test_a_trajectory_being_closed_reads_as_open_or_stored_never_missing(service, monkeypatch):
    """A GET that a close overtook answered 404: it asked the store first (not stored yet), the close then committed
    and removed the open trajectory, and the journal no longer had it. The close is made to land between the
    read's two looks, whichever it takes first."""
    service.open_trajectory("s-1", goal="Close me")
    service.append_state("s-1", {"url": "http://shop/a", "accessibility_tree": "'Catalog'"})
    armed = True

    def closing_after(read):
        def wrapped(*args, **kwargs):
            nonlocal armed
            found = read(*args, **kwargs)
            if armed:
                armed = False
                service.close_trajectory("s-1")
            return found

        return wrapped

    monkeypatch.setattr(service.store, "row", closing_after(service.store.row))
    monkeypatch.setattr(service.journal, "get", closing_after(service.journal.get))
    seen = service.trajectory("s-1")
    assert seen["id"] == "s-1" and seen["n_states"] == 1 and not armed


@pytest.mark.parametrize(
    "options", [{"max_sandboxes": 0}, {"max_sandboxes": -1}, {"max_open": 0}, {"open_max_age_s": 0.0}]
)
def test_limits_that_would_stall_or_crash_the_service_are_refused(tmp_path, clean_env, options):
    """Item 5 of issue 33: max_sandboxes -1 was a ValueError traceback, 0 made every C query wait 60 s for a 503,
    and an open-trajectory age of 0 dropped every stream."""
    from runbook.errors import ConfigError

    with pytest.raises(ConfigError, match="at least 1"):
        MemoryService(tmp_path / "store", create=True, **options)
