"""The recorder a simulated agent acts through: clock, episode states, and the ground-truth ledger.

State i is the page seen BEFORE action i (the shared data's convention), so `act()` snapshots the current page,
then the task shows the next one. Every snapshot logs the page's facts with its timestamp: the questions are
derived from that log, never from the world alone, so each gold answer is something a state actually showed.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass, field

from .blocks import Page
from .world import SITE, World

START = dt.datetime(2026, 1, 12, 8, 30, tzinfo=dt.UTC)


class Clock:
    """Monotonic recording time: seconds between steps, minutes to hours between trajectories."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.now = START

    def step(self) -> str:
        self.now += dt.timedelta(milliseconds=self.rng.randint(3_000, 45_000))
        return self.now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{self.now.microsecond // 1000:03d}Z"

    def gap(self) -> None:
        self.now += dt.timedelta(minutes=self.rng.randint(2, 240))


@dataclass
class Obs:
    key: tuple
    value: str
    tid: str
    idx: int
    ts: str


@dataclass
class Record:
    """What a task did, for the procedure / gotcha / failure questions."""

    tid: str
    kind: str
    goal: str
    success: bool
    marks: dict[str, list[int]]
    info: dict


@dataclass
class Sim:
    rng: random.Random
    world: World
    clock: Clock
    trajectories: list[dict] = field(default_factory=list)
    pages: dict[tuple[str, int], Page] = field(default_factory=dict)
    obs: list[Obs] = field(default_factory=list)
    records: list[Record] = field(default_factory=list)
    screenshots: bool = True
    hot: list[int] = field(default_factory=list)  # product ids most tasks touch, so values get re-observed
    looked_up: list[int] = field(default_factory=list)  # products a look-up task reported, newest last
    used: dict[tuple, list[str]] = field(default_factory=dict)  # every value a key ever held: edits pick new ones

    def remember(self, key: tuple, value: str) -> None:
        self.used.setdefault(key, []).append(value)

    def fresh(self, key: tuple, value: str) -> bool:
        return value not in self.used.get(key, [])


class Episode:
    def __init__(self, sim: Sim, kind: str, goal: str, page: Page):
        self.sim, self.kind, self.goal, self.page = sim, kind, goal, page
        self.rng = sim.rng
        self.tid = f"gen-acme-{len(sim.trajectories) + 1}"
        self.start_url = page.url
        self.states: list[dict] = []
        self.marks: dict[str, list[int]] = {}
        self.info: dict = {}
        sim.clock.gap()

    def say(self, *variants: str) -> str:
        """One of several phrasings, so thoughts are not a fixed template."""
        return self.rng.choice(variants)

    def act(self, thought: str, action: str, error: str = "", mark: str | None = None) -> int:
        idx = len(self.states)
        ts = self.sim.clock.step()
        p = self.page
        shot = f"screenshots/{self.tid}/{idx:04d}.png" if self.sim.screenshots else None
        self.states.append(
            {
                "state_index": idx,
                "step": idx,
                "url": p.url,
                "title": p.title,
                "accessibility_tree": p.text,
                "thought": thought,
                "action": action,
                "action_error": error,
                "timestamp": ts,
                "screenshot": shot,
            }
        )
        self.sim.pages[(self.tid, idx)] = p
        self.sim.obs.extend(Obs(k, v, self.tid, idx, ts) for k, v in p.facts)
        if mark:
            self.marks.setdefault(mark, []).append(idx)
        return idx

    def click(self, key: str, thought: str, nxt: Page | None, mark: str | None = None, error: str = "") -> int:
        idx = self.act(thought, f"click({self.page.bid(key)!r})", error, mark)
        if nxt is not None:
            self.page = nxt
        return idx

    def fill(self, key: str, text: str, thought: str, nxt: Page, mark: str | None = None) -> int:
        idx = self.act(thought, f"fill({self.page.bid(key)!r}, {text!r})", "", mark)
        self.page = nxt
        return idx

    def select(self, key: str, option: str, thought: str, nxt: Page, mark: str | None = None) -> int:
        idx = self.act(thought, f"select_option({self.page.bid(key)!r}, {option!r})", "", mark)
        self.page = nxt
        return idx

    def finish(self, thought: str, message: str, success: bool, mark: str | None = None) -> None:
        self.act(thought, f"send_msg_to_user({message!r})", "", mark)
        self.sim.trajectories.append(
            {
                "id": self.tid,
                "domain": "web",
                "site": SITE,
                "goal": self.goal,
                "start_url": self.start_url,
                "outcome": "success (reward 1.0)" if success else "failure (reward 0.0)",
                "source": {
                    "dataset": "runbook.simulate (synthetic Acme Admin)",
                    "license": "Apache-2.0",
                    "path": f"task/{self.kind}",
                },
                "states": self.states,
            }
        )
        self.sim.records.append(Record(self.tid, self.kind, self.goal, success, self.marks, self.info))


def click_timeout(bid: str, target: str, blocker: str | None = None) -> str:
    """Playwright's error when a click never lands; `blocker` is the element that intercepts pointer events."""
    log = [
        "TimeoutError: Locator.click: Timeout 500ms exceeded.",
        "Call log:",
        f'waiting for get_by_test_id("{bid}")',
        f"  -   locator resolved to {target}",
        "  - attempting click action",
    ]
    for attempt in range(3):
        log += [
            "  -   waiting for element to be visible, enabled and stable",
            "  -   element is visible, enabled and stable",
            "  -   scrolling into view if needed",
            "  -   done scrolling",
        ]
        if blocker:
            log.append(f"  -   {blocker} intercepts pointer events")
        log.append(f"  - retrying click action, attempt #{attempt + 1}")
    return "\n".join(log) + "\n"
