"""`runbook bench run`: every (method, budget) point of a config over its question sets, one run folder each.

For each distinct haystack, its store is prepared once (runbook.bench.stores); then each point whose run still
lacks some of that haystack's questions takes its Memory from the registry by name and answers them. Latency is
the wall time of `Memory.query` alone, as the harness times `query()`. With a reader, each context is answered
and graded too. Questions run `jobs` at a time; queries of a Memory that does not declare `concurrent_queries`
still run one at a time (their latency would otherwise include the others' work), only the reader overlaps.
"""

from __future__ import annotations

import contextlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .answering import answer_question, make_memory, new_query_lock
from .config import BenchConfig, QuestionSource, RunPoint
from .grading import Grader, build_grader, model_names
from .progress import Progress, SilentProgress
from .questions import Haystack, Question, load_question_set
from .run_folder import RunFolder, point_config, spec_json
from .stores import HaystackStore, given_store, prepare_store


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
    ray: str | None = None
    """Run the questions on the Ray cluster at this address ("auto": the one started on this machine, or
    RAY_ADDRESS); None: in this process."""


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
    with contextlib.ExitStack() as stack:
        ray = None
        if options.ray:  # connected before anything is written: without the extra or a cluster, nothing is
            from .cluster import ray_session

            ray = stack.enter_context(ray_session(options.ray))
        return _run(config, options, progress or SilentProgress(), ray)


def _run(config: BenchConfig, options: RunOptions, progress: Progress, ray) -> list[RunResult]:
    # absolute paths: on a cluster every node reaches the data, stores and run folders by the same path
    config = replace(
        config,
        runs_dir=config.runs_dir.resolve(),
        stores_dir=config.stores_dir.resolve(),
        store=config.store.resolve() if config.store else None,
    )
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
    jobs = max(1, options.jobs or config.jobs)
    work = {
        haystack: [q for q in questions if q.haystack == haystack]
        for haystack in dict.fromkeys(q.haystack for q in questions)
    }
    if ray is not None:
        from .cluster import answer_on_ray

        write_failures = answer_on_ray(
            ray,
            config,
            work,
            points,
            runs,
            jobs=jobs,
            use_reader=grader is not None,
            rebuild_stores=options.rebuild_stores,
            insert_workers=options.insert_workers,
            progress=progress,
        )
    else:
        write_failures = _answer_here(config, work, points, runs, grader, jobs, options, progress)
    ids = [q.id for q in questions]
    return [
        RunResult(p, runs[p.slug].folder, runs[p.slug].finish(ids, store_write_failures=sum(write_failures.values())))
        for p in points
    ]


def _answer_here(
    config: BenchConfig,
    work: dict[Haystack, list[Question]],
    points: list[RunPoint],
    runs: dict[str, RunFolder],
    grader: Grader | None,
    jobs: int,
    options: RunOptions,
    progress: Progress,
) -> dict[str, int]:
    """Answer every point's unanswered questions in this process; returns each haystack's store write failures."""
    write_failures: dict[str, int] = {}
    for haystack, asked in work.items():
        pending = [p for p in points if any(not runs[p.slug].done(q.id) for q in asked)]
        # prepared even when every run is done: the write-failure count comes from the store's build
        progress.note(f"store for {haystack.name or haystack.source.name}")
        if config.store is not None:
            ready = given_store(haystack, config.store)
        else:
            ready = prepare_store(
                haystack,
                config.stores_dir,
                rebuild=options.rebuild_stores,
                workers=options.insert_workers,
                note=progress.note,
            )
        write_failures[haystack.name] = ready.write_failures
        for point in pending:
            run = runs[point.slug]
            todo = [q for q in asked if not run.done(q.id)]
            progress.begin(point.label, len(asked), len(asked) - len(todo))
            memory = make_memory(point, ready)
            try:
                _answer_all(todo, memory, point.budget, ready, grader, run, progress, jobs)
            finally:
                if hasattr(memory, "close"):
                    memory.close()  # e.g. method C's sandbox kept warm for the next query
    return write_failures


def _questions(config: BenchConfig, options: RunOptions) -> list[Question]:
    sources = [QuestionSource(path) for path in options.questions] or config.questions
    out: list[Question] = []
    for source in sources:
        limit = options.limit or source.limit
        out += load_question_set(source.path.resolve(), tier=source.tier, limit=limit, data=source.data).questions
    seen: set[str] = set()
    for q in out:
        if q.id in seen:
            raise ConfigError(f"question id {q.id!r} occurs twice in the bench's question sets")
        seen.add(q.id)
    return out


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
    lock = new_query_lock(memory)

    def one(question: Question) -> None:
        record = answer_question(question, memory, budget, ready, grader, lock)
        run.append(record)
        progress.advance(run.config["label"])

    if jobs == 1 or len(todo) == 1:
        for question in todo:
            one(question)
        return
    with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="bench") as pool:
        for future in [pool.submit(one, q) for q in todo]:
            future.result()  # re-raises a ConfigError (bad key, unknown model) from any question
