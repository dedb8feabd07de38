"""What one query gives the agent loop (the Task), what picks the loop's next call (the Policy protocol), and what
the agent hands back (Spans)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ..core.hits import Hit
from ..core.question import QuestionAnalysis, analyze
from ..models.messages import Message, ToolSpec

if TYPE_CHECKING:  # numpy comes with it, and the programs that only pass it on need none
    from ..core.recall import ScanCandidates


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
    scan_candidates: ScanCandidates | None = None
    """In a large store, the runs a scan reads (R's best for the question); None: every run."""

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


class Policy(Protocol):
    """Picks the next step: an assistant Message with tool calls (or plain text, which the loop answers with a nudge).

    A policy may also define `begin(task: Task)`: the loop calls it once, before the first `next`, with the query's
    structured inputs (the offline planner works from those, not from the prompt's text); `output_view_tokens`:
    how much of one tool output it reads, when more than the loop's limit (a policy with no context window to spare,
    reading its own programs' output); and `extra_tools`: ToolSpecs it calls besides the ones every policy sees."""

    name: str

    def next(self, messages: list[Message], tools: list[ToolSpec]) -> Message: ...
