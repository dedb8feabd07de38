"""Method R's own signals that its evidence is weak (measured on the dev and generated sets): method auto escalates to
C on them, and method C gives its agent's states room in R's context only then.

R's evidence is weak when
- an exact phrase of the question (a name, id, quoted text) appears nowhere in R's context: the premise may be
  false, or BM25 ranked the page that has it too low;
- R's best page excerpts cover few of the question's key terms;
- the question is about errors and pitfalls (gotchas): R's pages rarely show what went wrong and what worked after.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..context import Context
from ..core.question import QuestionAnalysis, analyze

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


def phrases_lacking(phrases: tuple[str, ...] | list[str], texts: list[str]) -> list[str]:
    """The exact phrases of a question that none of `texts` shows (case, spacing and punctuation aside)."""
    everything = _normal(" ".join(texts))
    return [p for p in phrases if _normal(p).strip() and _normal(p) not in everything]


def shows_any(text: str, phrases: list[str]) -> bool:
    """Whether `text` shows one of `phrases` (case, spacing and punctuation aside)."""
    normal = _normal(text)
    return any(_normal(p) in normal for p in phrases)


def weakness(context: Context, analysis: QuestionAnalysis | None = None) -> Weakness:
    """R's signals for `context`, the context method R returned for its question."""
    analysis = analysis or analyze(context.question)
    texts = [item.render_text() for item in context.items]
    missing = phrases_lacking(analysis.phrases, texts)
    missing_top = phrases_lacking(analysis.phrases, texts[:TOP_ITEMS])
    top = _normal(" ".join(texts[:TOP_ITEMS]))
    terms = [t for t in analysis.terms if len(t) > 2]
    covered = [t for t in terms if re.search(rf" {re.escape(_normal(t).strip())}", top)]
    coverage = len(covered) / len(terms) if terms else 1.0
    return Weakness(missing, coverage, analysis.kind, missing_top)
