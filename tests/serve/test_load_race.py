"""Readers racing a writer: while trajectories are streamed in (closed whole, or re-inserted after every step) and
closed, concurrent clients query and read. Over a fixed number of rounds: no 5xx at all, and every read consistent
(a trajectory's n_states is its number of states; a trajectory being streamed is open or stored, never missing; once
its close has returned it is never open again).

Before: POST /query got 500 (IndexError in the pools: an index of one stamp read with the documents of another), a
close got 500 (EOFError reading a cache another thread was writing) and stayed listed as open though committed, and
a GET answered n_states 1 with 2 states."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from runbook.serve import MemoryService, create_app
from tests.conftest import make_trajectory
from tests.serve.test_http import Server, state_json

ROUNDS = 12
"""Trajectories the writer streams, one after another."""
STEPS = 4
READERS = 4
QUESTIONS = ["What price does the admin list for the Quest Lumaflex Band?", "Which page shows order 305?"]


@pytest.fixture
def seeded(tmp_path, clean_env):
    service = MemoryService(tmp_path / "store", create=True, write_timeout=60)
    for n in range(12):
        run = make_trajectory(
            f"seed-{n}",
            5,
            start=4 * n,
            texts=[
                f"RootWebArea 'Order {300 + n + i}'\n\tStaticText 'Quest Lumaflex Band ${20 + n}.00'" for i in range(5)
            ],
        )
        service.insert({"id": run.id, "goal": run.goal, "states": [state_json(s) for s in run.states]})
    yield service
    service.close()


class Log:
    """What the writer has done, when, and what the readers saw that they should not have."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.opened: dict[str, float] = {}
        self.closed: dict[str, float] = {}
        self.problems: list[str] = []
        self.done = threading.Event()
        self.requests = 0

    def problem(self, text: str) -> None:
        with self.lock:
            self.problems.append(text)


def writer(url: str, log: Log) -> None:
    with httpx.Client(base_url=url, timeout=120) as client:
        for n in range(ROUNDS):
            tid = f"stream-{n}"
            opened = client.post("/trajectories", json={"id": tid, "stream": True, "visible": ("close", "step")[n % 2]})
            if opened.status_code != 201:
                log.problem(f"open {tid}: {opened.status_code} {opened.text[:300]}")
            log.opened[tid] = time.monotonic()
            for i in range(STEPS):
                state = {"url": f"http://shop/p/{i}", "accessibility_tree": f"'Order {n}{i}' 'Quest Lumaflex Band'"}
                step = client.post(f"/trajectories/{tid}/states", json=state)
                if step.status_code != 201:
                    log.problem(f"append {tid}/{i}: {step.status_code} {step.text[:300]}")
            closed = client.post(f"/trajectories/{tid}/close", json={"outcome": "success"})
            if closed.status_code != 200:
                log.problem(f"close {tid}: {closed.status_code} {closed.text[:300]}")
            log.closed[tid] = time.monotonic()
    log.done.set()


def reader(url: str, log: Log, seed: int) -> None:
    with httpx.Client(base_url=url, timeout=120) as client:
        turn = seed
        while not log.done.is_set():
            turn += 1
            answer = client.post("/query", json={"question": QUESTIONS[turn % 2], "budget": 1500, "method": "r"})
            _check_status("query", answer, log)
            for tid in list(log.opened):
                started = time.monotonic()
                seen = client.get(f"/trajectories/{tid}")
                _check_status(f"GET {tid}", seen, log)
                _check_trajectory(tid, seen, started, log)
                if seen.status_code == 200 and not seen.json()["open"]:
                    state = client.get(f"/trajectories/{tid}/states/{turn % seen.json()['n_states']}")
                    _check_status(f"GET {tid} state", state, log)
            with log.lock:
                log.requests += 1 + 2 * len(log.opened)


def _check_status(what: str, response: httpx.Response, log: Log) -> None:
    if response.status_code >= 500:
        log.problem(f"{what}: {response.status_code} {response.text[:300]}")


def _check_trajectory(tid: str, response: httpx.Response, started: float, log: Log) -> None:
    if response.status_code == 404:
        log.problem(f"GET {tid}: 404 although it was opened")  # open, or stored: never neither
        return
    if response.status_code != 200:
        return
    body = response.json()
    if body["open"]:
        if tid in log.closed and log.closed[tid] < started:
            log.problem(f"GET {tid}: still open after its close returned")
        return
    if body["n_states"] != len(body["states"]) or [s["state_index"] for s in body["states"]] != list(
        range(body["n_states"])
    ):
        log.problem(f"GET {tid}: n_states {body['n_states']} with states {[s['state_index'] for s in body['states']]}")


def test_readers_racing_a_streaming_writer_get_no_5xx_and_consistent_reads(seeded):
    log = Log()
    with Server(create_app(seeded)) as url:
        threads = [threading.Thread(target=reader, args=(url, log, n)) for n in range(READERS)]
        for thread in threads:
            thread.start()
        writer(url, log)
        for thread in threads:
            thread.join(300)
    assert log.problems == [], "\n".join(log.problems)
    assert log.requests > 4 * ROUNDS  # the readers really raced the writer
    stored = {row.id: row.n_states for row in seeded.store.rows()}
    assert all(stored[f"stream-{n}"] == STEPS for n in range(ROUNDS))
    assert seeded.stats()["open_trajectories"] == 0
