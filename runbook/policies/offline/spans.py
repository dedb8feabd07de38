"""From the states the offline planner chose to the spans `finish` takes: neighbours of one run merged."""

from __future__ import annotations

from ...agent.types import Span
from ...core.choice import MAX_STATES

SPAN_GAP = 2
"""Two chosen states of a run this close become one span with the states between: the steps that link them."""


def spans_of(keys: list[tuple[str, int]], gap: int = 0) -> list[Span]:
    """States of one trajectory at most `gap` states apart merged into spans (the states between included), in
    the order their first state was chosen, within MAX_STATES in all."""
    spans: list[Span] = []
    for t, i in keys:
        for n, span in enumerate(spans):
            if span.trajectory_id == t and span.start_state_index - 1 - gap <= i <= span.end_state_index + 1 + gap:
                spans[n] = Span(t, min(span.start_state_index, i), max(span.end_state_index, i))
                break
        else:
            spans.append(Span(t, i, i))
    spans = _merge_touching(spans)
    while sum(span.size for span in spans) > MAX_STATES:
        spans.pop()
    return spans


def _merge_touching(spans: list[Span]) -> list[Span]:
    out: list[Span] = []
    for span in spans:
        for n, kept in enumerate(out):
            if kept.trajectory_id == span.trajectory_id and not (
                span.start_state_index > kept.end_state_index + 1 or span.end_state_index < kept.start_state_index - 1
            ):
                out[n] = Span(
                    kept.trajectory_id,
                    min(kept.start_state_index, span.start_state_index),
                    max(kept.end_state_index, span.end_state_index),
                )
                break
        else:
            out.append(span)
    return out
