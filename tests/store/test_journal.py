"""Open trajectories journaled in the store: read back by another process, a step cut short by a crash dropped,
an expired one discarded with a clear error."""

from __future__ import annotations

import os
import time

import pytest

from runbook.store.journal import Expired, Journal, NotOpen


def test_a_journal_is_read_back_whole_by_another_reader(store):
    journal = Journal(store.layout)
    run = journal.create("run-1", {"goal": "Check a price"}, visible="close")
    journal.append(run, {"url": "a", "state_index": 0}, received=True)
    journal.append(run, {"url": "b", "state_index": 1}, received=False, amend_previous={"action_error": "Timeout"})
    again = Journal(store.layout).get("run-1")  # a restarted server, or another process
    assert again.fields == {"goal": "Check a price"} and again.received == [0]
    assert again.steps == [{"url": "a", "state_index": 0, "action_error": "Timeout"}, {"url": "b", "state_index": 1}]
    assert Journal(store.layout).ids() == ["run-1"]
    assert oct((store.root / ".open").stat().st_mode & 0o777) == "0o700"  # private to the server's user


def test_a_step_cut_short_by_a_crash_is_dropped_and_the_next_one_appends_cleanly(store):
    journal = Journal(store.layout)
    run = journal.create("run-2", {}, visible="step")
    journal.append(run, {"url": "a", "state_index": 0}, received=False)
    with open(store.root / ".open" / "run-2" / "steps.jsonl", "ab") as fh:
        fh.write(b'{"state": {"url": "b", "sta')  # killed mid-write: never acknowledged
    run = journal.get("run-2")
    assert [s["url"] for s in run.steps] == ["a"]
    journal.append(run, {"url": "c", "state_index": 1}, received=False)
    assert [s["url"] for s in Journal(store.layout).get("run-2").steps] == ["a", "c"]


def test_an_open_trajectory_past_the_age_limit_is_discarded_with_a_clear_error(store):
    journal = Journal(store.layout, max_age_s=0.2)
    journal.create("old-run", {}, visible="close")
    time.sleep(0.4)
    with pytest.raises(Expired, match="discarded"):
        journal.get("old-run")
    with pytest.raises(NotOpen):
        journal.get("old-run")
    journal.create("older-run", {}, visible="close")
    time.sleep(0.4)
    assert journal.sweep() == ["older-run"] and os.listdir(store.root / ".open") == [".lock"]
    assert journal.ids() == []
