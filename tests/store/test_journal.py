"""Open trajectories journaled in the store: read back by another process, a step cut short by a crash dropped,
an expired one discarded with a clear error, a close under way marked for every process."""

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


def test_a_close_under_way_in_another_process_refuses_steps_until_that_process_is_gone(store):
    """A close writes without holding the journal's lock, so it marks the trajectory closing in the journal itself:
    a server process over the same store would otherwise acknowledge a step that the close then drops. A mark left
    by a process that died mid-close is not a close under way: the trajectory takes steps (and a close) again."""
    import subprocess
    import sys

    journal = Journal(store.layout)
    journal.create("run-3", {}, visible="close")
    closer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (store.root / ".open" / "run-3" / "closing").write_text(str(closer.pid))
        assert Journal(store.layout).get("run-3").closing is True
    finally:
        closer.kill()
        closer.wait()
    assert Journal(store.layout).get("run-3").closing is False  # its process is gone
    assert not (store.root / ".open" / "run-3" / "closing").exists()
    journal.mark_closing("run-3")
    assert Journal(store.layout).get("run-3").closing is True
    journal.unmark_closing("run-3")  # the close failed before its commit
    assert Journal(store.layout).get("run-3").closing is False
