"""Reader-free scores of one context against a question's gold data, and the failure diagnosis of one answer.

Scores (None where the question gives nothing to check):
- `answer_phrases`: every gold answer phrase occurs in the context (word-bounded, in the normal form of
  ../shared/tools/score_contexts.py, the scorer the project is held to, over the analysis and every item's JSON);
  text-grounded questions only (not visual-only, not false-premise);
- `evidence`: every gold evidence state is cited by an item (a state, or a span that covers it);
- `evidence_share`: the share of gold evidence states cited;
- `stale_led`: a dynamic question's context shows a state with an OLDER value before (or without) the latest one
  (notes are left out here: they span a whole trajectory and show no page values);
- `premise_flagged`: a false-premise question's analysis says the premise may be wrong;
- `excerpt_recall`: of the answerable questions whose context cites a gold state, whether the phrases reached the
  reader (the state was found: did the context show its answer, or cut it out?).
And what the context spends its tokens on: `items`, `furniture_tokens` (the site's menus and banners in the
excerpts) and `repeat_tokens` (items that show again what an earlier one shows).

Diagnosis, in AMemGym's spirit: WRITE (an evidence state is missing from the store), READ (the evidence never
reached the context), UTILIZATION (it did, and the reader still scored 0), STALENESS (the context led with an
older value).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass

from ..budget import count_tokens
from ..context import Context, EvidenceItem
from .questions import Question, StateRef

_PREMISE = re.compile(
    r"premise|found in no stored state|never written|no stored state matches|does not exist|"
    r"doesn t exist|no such|not found anywhere|never appears"
)


SUMMARY_KINDS = ("note", "summary")
"""Items that summarise a trajectory rather than show its pages."""


def context_normal_form(text: str) -> str:
    """score_contexts.py's normal form: lower-case, -/_ to spaces, punctuation to spaces, spaces collapsed."""
    text = text.lower().replace("-", " ").replace("_", " ")
    return re.sub(r"\s+", " ", re.sub(r"[^\w\s]", " ", text)).strip()


def phrase_in(normal_text: str, phrase: str) -> bool:
    """`phrase` occurs in already-normalised text, not inside a longer word."""
    p = context_normal_form(phrase)
    return bool(p) and re.search(rf"(?<!\w){re.escape(p)}(?!\w)", normal_text) is not None


def context_text(context: Context) -> str:
    """What the phrase check searches: the analysis and each item as JSON, normalised."""
    parts = [context.analysis] + [json.dumps(item.to_json(), ensure_ascii=False) for item in context.items]
    return context_normal_form(" ".join(parts))


def cites(item: EvidenceItem, ref: StateRef) -> bool:
    if item.trajectory_id != ref.trajectory_id or item.state_index is None:
        return False
    last = item.end_state_index if item.end_state_index is not None else item.state_index
    return item.state_index <= ref.state_index <= last


def first_citing(items: list[EvidenceItem], refs: list[StateRef]) -> int | None:
    """The position of the first item that cites any of `refs`."""
    return next((n for n, item in enumerate(items) if any(cites(item, r) for r in refs)), None)


@dataclass
class ContextScores:
    """The reader-free scores of one context (see the module docstring)."""

    answer_phrases: bool | None = None
    evidence: bool | None = None
    evidence_share: float | None = None
    stale_led: bool | None = None
    premise_flagged: bool | None = None
    excerpt_recall: bool | None = None
    answer_depth: int | None = None
    """Tokens a reader reads (the context's text, analysis first) before every answer phrase has appeared."""
    items: int = 0
    furniture_tokens: int = 0
    repeat_tokens: int = 0

    def to_json(self) -> dict:
        return asdict(self)


def score_context(question: Question, context: Context) -> ContextScores:
    scores = ContextScores()
    phrases = question.answer_phrases
    if phrases and not question.visual_only and not question.question_type.endswith("-abs"):
        text = context_text(context)
        scores.answer_phrases = all(phrase_in(text, p) for p in phrases)
        if scores.answer_phrases:
            scores.answer_depth = answer_depth(context, phrases)
    if question.evidence:
        cited = [any(cites(item, ref) for item in context.items) for ref in question.evidence]
        scores.evidence = all(cited)
        scores.evidence_share = sum(cited) / len(cited)
        if scores.answer_phrases is not None and any(cited):
            scores.excerpt_recall = scores.answer_phrases
    scores.items = len(context.items)
    scores.furniture_tokens = sum(item.furniture_tokens for item in context.items)
    scores.repeat_tokens = sum(item.tokens for item in context.items if item.repeat)
    if question.is_dynamic and question.stale_evidence:
        shown = [item for item in context.items if item.kind not in SUMMARY_KINDS]
        stale = first_citing(shown, question.stale_evidence)
        latest = first_citing(shown, question.evidence)
        scores.stale_led = stale is not None and (latest is None or stale < latest)
    if question.question_type.endswith("-abs"):
        scores.premise_flagged = bool(_PREMISE.search(context_normal_form(context.analysis)))
    return scores


def answer_depth(context: Context, phrases: list[str]) -> int | None:
    """Tokens of the context's text (`Context.to_text`) read before every phrase has appeared (None when its text
    never shows them all: a phrase found only in an item's other fields)."""
    text, items = context.to_text(), [item.render_text() for item in context.items]
    pieces = [text[: len(text) - sum(len(piece) for piece in items)], *items]  # the analysis, then each item
    read = ""
    for piece in pieces:
        if all(phrase_in(context_normal_form(read + piece), p) for p in phrases):
            low, high = 0, len(piece)
            while low < high:  # the shortest head of this piece after which every phrase has appeared
                mid = (low + high) // 2
                if all(phrase_in(context_normal_form(read + piece[:mid]), p) for p in phrases):
                    high = mid
                else:
                    low = mid + 1
            return count_tokens(read + piece[:low])
        read += piece
    return None


@dataclass
class Diagnosis:
    """Why an answer failed, where that can be told (each flag is None when it cannot)."""

    write_failure: bool
    read_failure: bool | None
    utilization_failure: bool | None
    staleness_failure: bool | None

    def to_json(self) -> dict:
        return asdict(self)


def diagnose(scores: ContextScores, *, missing_states: int, reader_score: float | None) -> Diagnosis:
    """READ: what the question needs is not in the context (its phrases when it has them, else its evidence)."""
    reached = scores.answer_phrases if scores.answer_phrases is not None else scores.evidence
    read_failure = None if reached is None else not reached
    utilization = None
    if reader_score is not None and reached is not None:
        utilization = bool(reached) and reader_score <= 0
    return Diagnosis(
        write_failure=missing_states > 0,
        read_failure=read_failure,
        utilization_failure=utilization,
        staleness_failure=scores.stale_led,
    )
