"""One question's work, wherever it runs (the local runner's threads or an actor on a Ray cluster): query the
point's Memory, score the context and (with a grader) answer and grade it, as one per_question.jsonl record.

Latency is the wall time of `Memory.query` alone, as the harness times `query()`. Both runners build the Memory and
the record with these functions, so a run on a cluster writes what a local run writes.
"""

from __future__ import annotations

import contextlib
import inspect
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..context import Context
from ..errors import ConfigError, SandboxError
from ..memory import get_memory, memory_class
from .config import RunPoint
from .evidence import diagnose, score_context
from .grading import Grader
from .questions import Question
from .stores import HaystackStore


def make_memory(point: RunPoint, ready: HaystackStore):
    """The point's Memory over the haystack's store; a method that writes transcripts writes them in the run."""
    options = dict(point.spec.options)
    if "transcripts" in inspect.signature(memory_class(point.spec.method)).parameters:
        options.setdefault("transcripts", str(point.folder / "transcripts"))
    return get_memory(point.spec.method, ready.store, **options)


SANDBOX_METHODS = frozenset({"c", "auto"})
"""The registry's methods that run code in a sandbox (auto routes some questions to C)."""


def uses_sandbox(point: RunPoint) -> bool:
    """Whether the point's method runs code in a sandbox: on a cluster it then takes a sandbox slot."""
    return point.spec.method in SANDBOX_METHODS


def new_query_lock(memory) -> contextlib.AbstractContextManager:
    """What a query holds: nothing for a Memory that declares `concurrent_queries`, else one lock per Memory
    (its latency would otherwise include the other queries' work; only the reader overlaps)."""
    return contextlib.nullcontext() if getattr(memory, "concurrent_queries", False) else threading.Lock()


def answer_question(
    question: Question, memory, budget: int, ready: HaystackStore, grader: Grader | None, query_lock=None
) -> dict[str, Any]:
    """Query, score and (with a grader) answer one question: its per_question.jsonl record."""
    record = question_fields(question)
    started = time.perf_counter()
    try:
        with query_lock or contextlib.nullcontext():
            started = time.perf_counter()
            context = memory.query(question.question, budget=budget, image=question.image)
            latency = time.perf_counter() - started
    except (ConfigError, SandboxError):
        raise  # a missing key, model, engine or image: every question would fail the same way
    except Exception as exc:  # one failed query is a failed question, not a failed run
        record.update(
            memory_query_duration_seconds=time.perf_counter() - started,
            memory_context=[],
            error=f"{type(exc).__name__}: {exc}",
            score=0.0 if grader else None,
            score_bool=False,
            is_unknown=False,
            memory_context_token_count=0,
            memory_context_original_token_count=0,
        )
        return record
    record.update(context_fields(context, latency))
    scores = score_context(question, context)
    grade = grader.grade(question, context) if grader else None
    if grade:
        record.update(grade.to_json())
    missing = ready.missing_states(question.evidence)
    record.update(
        reader_free=scores.to_json(),
        missing_evidence_states=len(missing),
        diagnosis=diagnose(scores, missing_states=len(missing), reader_score=grade.score if grade else None).to_json(),
    )
    return record


def question_fields(question: Question) -> dict[str, Any]:
    return {
        "question_id": question.id,
        "question_type": question.question_type,
        "category": question.category,
        "is_abstention_problem": question.is_abstention,
        "eval_function": question.eval_function,
        "question_text": question.question,
        "question_image": question.image,
        "answer_gold": question.answer,
        "set": question.set_name,
        "probe_kind": question.probe_kind or None,
        "haystack": question.haystack.name,
        "score": None,
        "timestamp_utc": datetime.now(UTC).isoformat(),
    }


def context_fields(context: Context, latency: float) -> dict[str, Any]:
    """The context as the harness records it, plus what it cites and what the query cost."""
    meta = context.meta or {}
    return {
        "memory_query_duration_seconds": latency,
        "memory_context": context.to_lme_items(),
        "memory_context_token_count": context.tokens,
        "memory_context_original_token_count": context.tokens,
        "memory_context_was_truncated": False,
        "budget": context.budget,
        "analysis": context.analysis,
        "citations": [
            {
                "trajectory_id": i.trajectory_id,
                "state_index": i.state_index,
                "end_state_index": i.end_state_index,
                "kind": i.kind,
                "label": i.label,
                "tokens": i.tokens,
            }
            for i in context.items
        ],
        "memory": {
            "tool_calls": _tool_calls(meta.get("transcript")),
            "steps": meta.get("steps"),
            "model_tokens": meta.get("tokens_used"),
            "cost": meta.get("cost"),
            "stop": meta.get("stop"),
            "method_latency_s": round(context.latency_s, 4),
        },
    }


def _tool_calls(transcript: str | None) -> int | None:
    """Tool calls of one query, counted in its transcript (None for a method that keeps none)."""
    if not transcript or not Path(transcript).exists():
        return None
    with open(transcript, encoding="utf-8") as fh:
        return sum(1 for line in fh if line.startswith('{"type": "tool"'))
