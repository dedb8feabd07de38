"""Method `auto`: method R first; method C only when R's own evidence looks weak, so that easy questions get R's
latency and hard ones C's depth.

    memory = AutoMemory(store)                      # options of C (policy=, sandbox=, ...) pass through
    context = memory.query("Why did the coupon request fail?", budget=8000)
    context.meta["escalated"], context.meta["weak"]  # whether C ran, and R's signals that said so

R's evidence is weak by its own signals (`memory/weakness.py`).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ..budget import DEFAULT_BUDGET, parse_budget
from ..context import Context
from ..core.question import analyze
from ..query_input import check_query
from ..store import Store
from .weakness import weakness

if TYPE_CHECKING:
    from ..pools import Retriever


class AutoMemory:
    """R, escalating to C when R's evidence is weak. Options other than R's go to C."""

    name = "auto"

    def __init__(self, store: Store, **options):
        from .coding_agent import CodingAgentMemory
        from .retrieval import RetrievalMemory

        self.store = store
        self.r = RetrievalMemory(store)
        self.c = CodingAgentMemory(store, retriever=self.r.retriever, **options)

    @property
    def retriever(self) -> Retriever:
        """R's pools, which both of its methods read (C shares R's)."""
        return self.r.retriever

    def insert(self, trajectory) -> str:
        return self.r.insert(trajectory)

    def close(self) -> None:
        """Stop C's spare sandbox, if it keeps one warm."""
        self.c.close()

    def query(self, question: str, *, budget: int | str = DEFAULT_BUDGET, image: str | None = None) -> Context:
        started = time.perf_counter()
        budget = parse_budget(budget)
        question, image = check_query(question, image)
        analysis = analyze(question)  # once: R, the weakness check and C all read it
        context = self.r.query(question, budget=budget, image=image, analysis=analysis)
        signals = weakness(context, analysis)
        if signals.weak or image:  # only C looks at the question's image
            context = self.c.query(question, budget=budget, image=image, analysis=analysis)
        context.method = self.name
        context.meta.update(escalated=context.meta.get("policy") is not None, weak=signals.to_json())
        context.latency_s = time.perf_counter() - started
        return context
