"""Method `auto`: method R first; method C only when R's own evidence looks weak, so that easy questions get R's
latency and hard ones C's depth.

    memory = AutoMemory(store)                      # options of C (policy=, sandbox=, ...) pass through
    context = memory.query("Why did the coupon request fail?", budget=8000)
    context.meta["escalated"], context.meta["weak"]  # whether C ran, and R's signals that said so

R's evidence is weak when (measured on the dev and generated sets, see `weakness`):
- an exact phrase of the question (a name, id, quoted text) appears nowhere in R's context: the premise may be
  false, or BM25 ranked the page that has it too low;
- R's best page excerpts cover few of the question's key terms;
- the question is about errors and pitfalls (gotchas): R's pages rarely show what went wrong and what worked after.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..budget import DEFAULT_BUDGET, parse_budget
from ..context import Context
from ..core.question import QuestionAnalysis, analyze
from ..query_input import check_query
from ..store import Store

if TYPE_CHECKING:
    from ..pools import Retriever

MIN_TERM_COVERAGE = 0.6
"""Share of the question's key terms R's best items must mention, below which C is asked."""
TOP_ITEMS = 5
"""R's first items that count for term coverage."""


@dataclass
class Weakness:
    """R's signals for one question: why (or whether) it should escalate to C."""

    missing_phrases: list[str] = field(default_factory=list)
    term_coverage: float = 1.0
    kind: str = ""
    missing_top: list[str] = field(default_factory=list)
    """Exact phrases of the question that R's first items do not show."""

    @property
    def weak(self) -> bool:
        return bool(self.missing_phrases) or self.term_coverage < MIN_TERM_COVERAGE or self.kind == "gotcha"

    def reasons(self) -> list[str]:
        out = []
        if self.missing_phrases:
            out.append("not in R's evidence: " + ", ".join(repr(p) for p in self.missing_phrases))
        if self.term_coverage < MIN_TERM_COVERAGE:
            out.append(f"R's best items mention {self.term_coverage:.0%} of the key terms")
        if self.kind == "gotcha":
            out.append("a question about errors and pitfalls")
        return out

    def to_json(self) -> dict:
        return {
            "weak": self.weak,
            "missing_phrases": self.missing_phrases,
            "missing_top": self.missing_top,
            "term_coverage": round(self.term_coverage, 3),
            "kind": self.kind,
            "reasons": self.reasons(),
        }


def _normal(text: str) -> str:
    return " " + re.sub(r"[^a-z0-9]+", " ", text.lower()) + " "


def weakness(context: Context, analysis: QuestionAnalysis | None = None) -> Weakness:
    """R's signals for `context`, the context method R returned for its question."""
    analysis = analysis or analyze(context.question)
    everything = _normal(" ".join(item.render_text() for item in context.items))
    missing = [p for p in analysis.phrases if _normal(p).strip() and _normal(p) not in everything]
    top = _normal(" ".join(item.render_text() for item in context.items[:TOP_ITEMS]))
    missing_top = [p for p in analysis.phrases if _normal(p).strip() and _normal(p) not in top]
    terms = [t for t in analysis.terms if len(t) > 2]
    covered = [t for t in terms if re.search(rf" {re.escape(_normal(t).strip())}", top)]
    coverage = len(covered) / len(terms) if terms else 1.0
    return Weakness(missing, coverage, analysis.kind, missing_top)


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
