"""SandboxSupply: one fresh sandbox per query, a spare started ahead only when warm, nothing left after close."""

from __future__ import annotations

import threading

from runbook.memory.sandboxes import SandboxSupply


class Recorded:
    """A stand-in sandbox that records its life (the real backends are tested in tests/sandbox)."""

    def __init__(self, name: str, log: list):
        self.name, self.log, self.started, self.stopped = name, log, False, False

    def start(self):
        self.started = True
        self.log.append(("start", id(self), threading.current_thread().name))
        return self

    def stop(self):
        self.stopped = True
        self.log.append(("stop", id(self)))


def supply(name: str, warm: bool):
    log, made = [], []

    def make():
        made.append(Recorded(name, log))
        return made[-1]

    return SandboxSupply(make, warm=warm), made, log


def test_cold_supply_starts_one_sandbox_per_query_on_the_calling_thread_and_stops_each():
    sandboxes, made, log = supply("docker", warm=False)
    for _ in range(2):
        with sandboxes.sandbox() as box:
            assert box.started and not box.stopped
    sandboxes.close()  # a used container is removed in the background: close waits for it
    assert len(made) == 2 and all(b.stopped for b in made)
    assert all(entry[2] == threading.current_thread().name for entry in log if entry[0] == "start")


def test_a_backend_tied_to_its_thread_is_stopped_when_its_query_ends():
    sandboxes, made, _ = supply("bwrap", warm=False)
    with sandboxes.sandbox() as box:
        pass
    assert box.stopped


def test_warm_supply_hands_each_query_a_sandbox_started_ahead_and_never_reuses_one():
    sandboxes, made, _ = supply("docker", warm=True)
    used = []
    for _ in range(3):
        with sandboxes.sandbox() as box:
            used.append(box)
    sandboxes.close()
    assert len({id(b) for b in used}) == 3  # never the same sandbox twice
    assert used[1] is made[1] and used[2] is made[2]  # each started ahead, during the query before
    assert len(made) == 4 and all(b.stopped for b in made)  # the last spare is stopped by close()


def test_a_backend_tied_to_its_thread_is_never_kept_warm():
    sandboxes, made, log = supply("bwrap", warm=True)
    with sandboxes.sandbox():
        pass
    sandboxes.close()
    assert len(made) == 1 and made[0].stopped
    assert all(entry[2] == threading.current_thread().name for entry in log if entry[0] == "start")
