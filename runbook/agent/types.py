"""What one query gives the agent loop (the Task) and what the agent hands back (Spans)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..core.hits import Hit
from ..core.question import QuestionAnalysis, analyze


@dataclass(slots=True)
class Task:
    """What a query gives its policy as structured input (model policies read the rendered user message instead)."""

    question: str
    image: str | None = None
    """Path of the question's image, if any."""
    recall: list[Hit] = field(default_factory=list)
    """Method R's ranked hits for the question: first the ones R's own context would hold (marked `packed`), in
    R's order, then the rest of what it ranked."""
    term_shares: dict[str, float] = field(default_factory=dict)
    """{word of the question: share of the stored states that have it} (from R's index): what a full scan for
    the word would cost, and how little finding it says."""
    analysis: QuestionAnalysis | None = None
    """The question analysed (once per query: method R's ranking, the planner and the packing share it); analysed
    here when not given."""

    def __post_init__(self) -> None:
        if self.analysis is None:
            self.analysis = analyze(self.question)


@dataclass(frozen=True, slots=True)
class Span:
    """Consecutive states of one trajectory that the agent hands back as evidence (indices inclusive)."""

    trajectory_id: str
    start_state_index: int
    end_state_index: int

    @property
    def size(self) -> int:
        return self.end_state_index - self.start_state_index + 1

    def to_json(self) -> dict[str, Any]:
        return {
            "trajectory_id": self.trajectory_id,
            "start_state_index": self.start_state_index,
            "end_state_index": self.end_state_index,
        }
