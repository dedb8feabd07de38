"""Reference baselines: no memory at all; the full trajectories, newest first, cut to the budget; and plain BM25
over single states' text, the top states packed into the budget."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from ..budget import DEFAULT_BUDGET, parse_budget, truncate_to_tokens
from ..context import Context, EvidenceItem, pack
from ..core.hits import Hit
from ..core.layout import state_relpath
from ..errors import UnsafeStoreFile
from ..query_input import check_query
from ..store import Store

if TYPE_CHECKING:
    from ..core.bm25 import BM25Index
from ..trajectory.model import Trajectory

log = logging.getLogger(__name__)


class _StoreOnly:
    """A baseline that reads the store alone: a trajectory is inserted without pools."""

    def __init__(self, store: Store, **_options):
        self.store = store

    def insert(self, trajectory: Trajectory) -> str:
        with self.store.writer() as writer:
            return writer.insert(trajectory).status


class NoMemory(_StoreOnly):
    """The empty context: what the reader knows without any memory (LongMemEval-V2's no_retrieval)."""

    name = "none"

    def query(self, question: str, *, budget: int | str = DEFAULT_BUDGET, image: str | None = None) -> Context:
        start = time.perf_counter()
        budget = parse_budget(budget)
        context = pack(question, budget, [], method=self.name, store_root=str(self.store.root))
        context.latency_s = time.perf_counter() - start
        return context


class FullTrajectoriesMemory(_StoreOnly):
    """The stored trajectories themselves, whole and newest first, until the budget is spent (the last one cut).

    No selection at all: what a long-context reader sees when the history is simply truncated to its window.
    """

    name = "full"

    def query(self, question: str, *, budget: int | str = DEFAULT_BUDGET, image: str | None = None) -> Context:
        start = time.perf_counter()
        budget = parse_budget(budget)
        newest_first = sorted(self.store.rows(), key=lambda row: row.seq, reverse=True)
        # a generator: packing stops at the first trajectory that does not fit, so the rest are never read
        items = (self._item(row) for row in newest_first)
        context = pack(question, budget, items, method=self.name, store_root=str(self.store.root))
        context.latency_s = time.perf_counter() - start
        return context

    def _item(self, row) -> EvidenceItem:
        from ..store.layout import STATES_DIR, TRAJECTORIES_DIR

        states = []
        for index in range(row.n_states):
            # the store's one safe read: a state file planted as a link (or FIFO) is left out, never followed
            try:
                states.append(self.store.layout.read_text(self.store.layout.state_file(row.dir, index)))
            except UnsafeStoreFile as exc:
                log.warning("left out of the evidence: %s", exc)
        return EvidenceItem(
            trajectory_id=row.id,
            state_index=0,
            end_state_index=row.n_states - 1,
            url=row.start_url,
            timestamp=row.first_ts,
            kind="span",
            goal=row.goal,
            label=row.outcome or "",
            path=f"{TRAJECTORIES_DIR}/{row.dir}/{STATES_DIR}",
            text="\n\n".join(states),
        )


class BM25StateMemory:
    """BM25 over each state's title, URL and page text (no neighbours, notes or events); whole states, best first."""

    name = "bm25"

    def __init__(self, store: Store, top: int = 50, states_per_budget: int = 8, **_options):
        self.store = store
        self.top = top
        self.states_per_budget = states_per_budget
        """Each state is cut to budget/states_per_budget tokens (head kept), so several states fit; 1 = whole."""
        self._index: BM25Index | None = None
        self._stamp: int | None = None

    def _load(self):
        from ..core.bm25 import load_index
        from ..pools.storage import open_snapshot

        snapshot = open_snapshot(self.store.layout)
        if snapshot.stamp != self._stamp:
            self._snapshot = snapshot
            self._index = load_index(snapshot, "slices", {"page": 1.0})
            self._stamp = snapshot.stamp
        return self._snapshot, self._index

    def insert(self, trajectory: Trajectory) -> str:
        from ..pools.build import insert_with_pools

        return insert_with_pools(self.store, trajectory)

    def query(self, question: str, *, budget: int | str = DEFAULT_BUDGET, image: str | None = None) -> Context:
        from ..core.text import tokenize

        start = time.perf_counter()
        budget = parse_budget(budget)
        question, image = check_query(question, image)
        snapshot, index = self._load()
        query = {t: 1.0 for t in tokenize(question)}  # plain: every word of the question, no analysis
        docs = snapshot.docs("slices")
        items = []
        share = budget // max(1, self.states_per_budget)
        spent = 0
        for d, score in index.top(query, self.top):
            if spent >= budget:
                break  # enough to fill the budget: reading and cutting more states would only cost time
            hit = Hit.from_doc(docs[d], f"s{d}", "slices")
            try:
                header, page = self.store.read_state_file(hit.folder, hit.state_index)
            except UnsafeStoreFile as exc:
                log.warning("left out of the evidence: %s", exc)
                continue
            text = f"title: {header.get('title', '')}\naction: {header.get('action', '')}\n---\n{page}"
            elided = 0
            if self.states_per_budget > 1:
                text, elided = truncate_to_tokens(text, share)
            items.append(
                EvidenceItem(
                    trajectory_id=hit.trajectory_id,
                    state_index=hit.state_index,
                    url=hit.url,
                    timestamp=hit.timestamp,
                    kind="state",
                    path=state_relpath(hit.folder, hit.state_index),
                    score=round(score, 4),
                    text=text,
                    elided_tokens=elided,
                )
            )
            spent += share if self.states_per_budget > 1 else budget
        context = pack(question, budget, items, method=self.name, store_root=str(self.store.root))
        context.latency_s = time.perf_counter() - start
        return context
