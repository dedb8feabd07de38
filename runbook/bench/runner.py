"""`runbook bench run`: every (method, budget) point of a config over its question sets, one run folder each.

For each distinct haystack, its store is prepared once (runbook.bench.stores); then each point whose run still
lacks some of that haystack's questions takes its Memory from the registry by name and answers them. Latency is
the wall time of `Memory.query` alone, as the harness times `query()`. With a reader, each context is answered
and graded too. Questions run `jobs` at a time; queries of a Memory that does not declare `concurrent_queries`
still run one at a time (their latency would otherwise include the others' work), only the reader overlaps.
"""

from __future__ import annotations

import contextlib
import inspect
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from ..context import Context
from ..errors import ConfigError, SandboxError
from ..memory import get_memory, memory_class
from .config import BenchConfig, RunPoint
from .evidence import diagnose, score_context
from .grading import Grader, build_grader, model_names
from .questions import Question, load_question_set
from .run_folder import RunFolder, point_config, spec_json
from .stores import HaystackStore, prepare_store


class Progress(Protocol):
    """What the runner reports as it goes (the CLI draws it with rich; tests may collect it)."""

    def note(self, text: str) -> None: ...

    def begin(self, label: str, total: int, done: int) -> None: ...

    def advance(self, label: str) -> None: ...


class SilentProgress:
    def note(self, text: str) -> None:
        pass

    def begin(self, label: str, total: int, done: int) -> None:
        pass

    def advance(self, label: str) -> None:
        pass


@dataclass
class RunOptions:
    """Choices of one `runbook bench run` that are not part of the config."""

    jobs: int | None = None
    """Questions at once (default: the config's `jobs`)."""
    limit: int | None = None
    """Only the first N questions of each set."""
    only: list[str] = field(default_factory=list)
    """Only the methods with these labels (or registry names)."""
    questions: list[Path] = field(default_factory=list)
    """Question files that replace the config's."""
    fresh: bool = False
    """Start every selected run over instead of resuming it."""
    reader: bool = True
    """Use the config's reader (False: reader-free scores only)."""
    rebuild_stores: bool = False
    insert_workers: int | None = None
    """Processes that stage trajectories when a store is built (default: insert's own)."""


@dataclass
class RunResult:
    point: RunPoint
    folder: Path
    metrics: dict[str, Any]


def run_bench(
    config: BenchConfig, options: RunOptions | None = None, progress: Progress | None = None
) -> list[RunResult]:
    """Run the config's matrix; returns each run's aggregated metrics."""
    options = options or RunOptions()
    progress = progress or SilentProgress()
    questions = _questions(config, options)
    points = [
        p for p in config.points() if not options.only or p.spec.label in options.only or p.spec.method in options.only
    ]
    if not points:
        raise ConfigError(f"no method matches {options.only}; labels: {[m.label for m in config.methods]}")
    grader = build_grader(config.reader, config.judge) if config.reader and options.reader else None
    reader_spec = spec_json(config.reader)  # a dict whenever there is a grader: it is built from the reader
    reader_json = {**reader_spec, **model_names(grader)} if grader and reader_spec is not None else None
    judge_json = spec_json(config.judge) if grader else None
    runs = {
        p.slug: RunFolder(p.folder, point_config(p, reader=reader_json, judge=judge_json), fresh=options.fresh)
        for p in points
    }
    write_failures: dict[str, int] = {}
    jobs = max(1, options.jobs or config.jobs)
    for haystack in dict.fromkeys(q.haystack for q in questions):
        asked = [q for q in questions if q.haystack == haystack]
        pending = [p for p in points if any(not runs[p.slug].done(q.id) for q in asked)]
        # prepared even when every run is done: the write-failure count comes from the store's build
        progress.note(f"store for {haystack.name or haystack.source.name}")
        ready = prepare_store(
            haystack, config.stores_dir, rebuild=options.rebuild_stores, workers=options.insert_workers
        )
        write_failures[haystack.name] = ready.write_failures
        for point in pending:
            run = runs[point.slug]
            todo = [q for q in asked if not run.done(q.id)]
            progress.begin(point.label, len(asked), len(asked) - len(todo))
            memory = _memory(point, ready, run.folder)
            try:
                _answer_all(todo, memory, point.budget, ready, grader, run, progress, jobs)
            finally:
                if hasattr(memory, "close"):
                    memory.close()  # e.g. method C's sandbox kept warm for the next query
    ids = [q.id for q in questions]
    return [
        RunResult(p, runs[p.slug].folder, runs[p.slug].finish(ids, store_write_failures=sum(write_failures.values())))
        for p in points
    ]


def _questions(config: BenchConfig, options: RunOptions) -> list[Question]:
    sources: list[tuple[Path, str, int | None]] = [(path, "small", None) for path in options.questions] or [
        (s.path, s.tier, s.limit) for s in config.questions
    ]
    out: list[Question] = []
    for path, tier, limit in sources:
        out += load_question_set(path, tier=tier, limit=options.limit or limit).questions
    seen: set[str] = set()
    for q in out:
        if q.id in seen:
            raise ConfigError(f"question id {q.id!r} occurs twice in the bench's question sets")
        seen.add(q.id)
    return out


def _memory(point: RunPoint, ready: HaystackStore, folder: Path):
    """The point's Memory over the haystack's store; a method that writes transcripts writes them in the run."""
    options = dict(point.spec.options)
    if "transcripts" in inspect.signature(memory_class(point.spec.method)).parameters:
        options.setdefault("transcripts", str(folder / "transcripts"))
    return get_memory(point.spec.method, ready.store, **options)


def _answer_all(
    todo: list[Question],
    memory,
    budget: int,
    ready: HaystackStore,
    grader: Grader | None,
    run: RunFolder,
    progress: Progress,
    jobs: int,
) -> None:
    query_lock = contextlib.nullcontext() if getattr(memory, "concurrent_queries", False) else threading.Lock()

    def one(question: Question) -> None:
        record = answer_question(question, memory, budget, ready, grader, query_lock)
        run.append(record)
        progress.advance(run.config["label"])

    if jobs == 1 or len(todo) == 1:
        for question in todo:
            one(question)
        return
    with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="bench") as pool:
        for future in [pool.submit(one, q) for q in todo]:
            future.result()  # re-raises a ConfigError (bad key, unknown model) from any question


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
