"""Method R: knowledge pools (state slices, events, notes) built at insert time, searched at query time."""

from __future__ import annotations

import time

from ..budget import DEFAULT_BUDGET, parse_budget
from ..context import Context, pack
from ..core.question import QuestionAnalysis
from ..query_input import check_query
from ..store import Store
from ..trajectory.model import Trajectory


class RetrievalMemory:
    """Fast retrieval over the store's pools: notes, then events, then state slices, cut to the budget.

    Options: any field of `runbook.pools.RetrievalSettings` (e.g. `context_weight=2.0`, `slice_tokens=600`).
    """

    name = "r"

    def __init__(self, store: Store, **options):
        from ..pools import RetrievalSettings, Retriever

        known = {k: v for k, v in options.items() if k in RetrievalSettings.__dataclass_fields__}
        self.store = store
        self.retriever = Retriever(store, RetrievalSettings(**known))
        self.retriever.warm()  # a memory is long-lived: loading belongs to its set-up, not to each query

    def insert(self, trajectory: Trajectory) -> str:
        from ..pools.build import insert_with_pools

        return insert_with_pools(self.store, trajectory)

    def query(
        self,
        question: str,
        *,
        budget: int | str = DEFAULT_BUDGET,
        image: str | None = None,
        analysis: QuestionAnalysis | None = None,
    ) -> Context:
        """R's evidence for `question`; `analysis`: the question's, when the caller has analysed it already."""
        start = time.perf_counter()
        budget = parse_budget(budget)
        question, image = check_query(question, image)
        result = self.retriever.search_counted(question, budget, analysis)
        context = pack(
            question,
            budget,
            result.items,
            analysis=result.analysis_text(),
            left_out=result.left_out,
            method=self.name,
            store_root=str(self.store.root),
        )
        context.latency_s = time.perf_counter() - start
        context.meta["counts"] = {
            kind: sum(1 for i in context.items if i.kind == kind) for kind in ("note", "event", "state")
        }
        return context

    def shortlist(self, question: str, k: int = 20) -> list[dict]:
        """R's top states for `question`: a starting point for method C."""
        return self.retriever.shortlist(question, k)
