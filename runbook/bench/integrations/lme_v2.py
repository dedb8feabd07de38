"""runbook inside LongMemEval-V2's own harness (github.com/xiaowu0162/LongMemEval-V2).

The harness takes memories that subclass its `memory_modules.memory.Memory` and are registered under a
`memory_type`; it builds one from `{"memory_type": "runbook", "memory_params": {...}}`, streams the haystack's
trajectories into `insert(trajectory: dict)`, then times `query(query, query_image=None)`, which returns
`[{"type": "text"|"image", "value": ...}]` (most important first: the harness drops whole items from the tail).
With `--save-memory` it calls `_save_backend(dir)` after the inserts, and `--load-memory-dir` builds a fresh
memory and calls `_load_backend(dir)` before any query.

Run it from a checkout of the harness (its data prepared as its README says):

    cd LongMemEval-V2
    python -m runbook.bench.integrations.lme_v2 --data-root "$DATA_ROOT" --domain web --tier small \\
        --output-dir runs/runbook_r_web_small --params '{"method": "r", "budget": "8k"}' -- \\
        --model Qwen/Qwen3.5-9B --base-url "$READER_BASE_URL" --evaluator-model gpt-5.2 \\
        --memory-context-max-tokens 8000

That selects the domain's questions and their haystacks with the harness's own data functions, registers the
`runbook` memory type, writes its memory config, loads the harness's reader processor once (the harness itself
loads it only at its first prompt, after the whole insert: a missing one failed minutes in), and runs
`evaluation/harness.py` with everything after `--`.
`memory_params`: `method` (a name in runbook.memory.METHODS, default r), `budget` (default 8k: set it to the
harness's --memory-context-max-tokens), `tokenizer` (the reader's tokenizer: a tokenizer.json, its folder, or a
Hugging Face name in the local cache; the context is then counted as the harness counts it, chat template and
image tokens included; without it runbook keeps runbook.reader_tokens.CL100K_MARGIN of the budget free),
`options` (the method's keyword options), `screenshot_root` (where relative screenshot paths start; the harness
gives custom types no data root, so the launcher sets it to --data-root), `store_dir` (a parent folder for the
stores; default the system's temporary folder), `keep_stores` (idle stores kept for reuse, default 1).

Stores: the harness builds one memory per question when haystacks differ. A memory whose trajectories so far are
the beginning of a finished store's haystack waits instead of inserting; at its first query it shares that store
when the haystacks are equal (one store per distinct haystack), and builds its own otherwise. A store nobody uses
is kept for reuse up to `keep_stores`, then removed, and every store is removed at exit; so disk use is bounded by
the stores in use plus `keep_stores`. Image items point at the screenshot files the trajectories named (the data
root's), not into a store, so the harness's `per_question.jsonl` never names a deleted file.

Nothing here imports the harness until `register()` or the launcher runs, so runbook works without it.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import re
import shutil
import sys
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...budget import parse_budget
from ...context import Context, pack
from ...core.question import analyze
from ...errors import InputError
from ...memory import get_memory
from ...reader_tokens import ReaderCounter, fit_context
from ...store import Store
from ...trajectory.model import Trajectory, trajectory_from_dict
from ...trajectory.readers import content_form
from .lme_stores import STORES, Lease, StoreEntry

MEMORY_TYPE = "runbook"
SAVED_STORE = "runbook_store"
"""The folder `_save_backend` writes the store to, inside the harness's memory_state folder."""
SAVED_SOURCES = "runbook_screenshots.json"
"""Beside it: which screenshot file each stored state came from, so a loaded memory names the same files."""
VISUAL_SCREENSHOTS = 2
"""Leading items that get their state's screenshot right after their text when a question is visual."""
_VISUAL = re.compile(
    r"\b(screenshots?|images?|pictures?|icons?|colou?rs?|logos?|visual(ly)?|look(s)? like|shown in|appear(s|ance)?)\b",
    re.IGNORECASE,
)


def trajectory_of(obj: dict, screenshot_root: str | None) -> Trajectory:
    """A harness trajectory (the `states` form or the `content` + `metadata` form) as runbook's Trajectory, read as
    the harness's own loader reads it: a state's position is its index, and fields runbook does not know are kept
    or ignored rather than refused (the harness accepts them)."""
    if content_form.is_content_form(obj):
        return content_form.from_content_form(obj, base_dir=screenshot_root, lenient=True)
    return trajectory_from_dict(obj, base_dir=screenshot_root, lenient=True)


_VERB_FORM = re.compile(r"(?:ed|ing|en)$")
RARE_SHARE = 0.02
"""A word on fewer than this share of the stored states' text names something the pages rarely write down."""


def is_visual(
    question: str,
    image: str | None,
    context: Context | None = None,
    shares: Callable[[str], dict[str, float]] | None = None,
) -> bool:
    """A question that carries an image, asks about what a page looks like, or asks for something its context's text
    does not show and the stored pages rarely write (a key term found nowhere in the context and on under RARE_SHARE
    of the states: 'what number does the count badge show?' where no page text says 'badge'; the screenshot may show
    it). `shares(text)`: {word: share of the stored states that have it}; without it, any missing term counts."""
    if image is not None or _VISUAL.search(question):
        return True
    if context is None:
        return False
    text = " ".join([context.analysis, *(item.text for item in context.items)]).lower()
    terms = [t for t in analyze(question).terms if len(t) > 2 and not t.isdigit()]
    # a thing is named by a noun: a verb's form ('switched', 'happened', 'hiding') says what was done to it
    missing = [t for t in terms if not re.search(rf"\b{re.escape(t)}", text) and not _VERB_FORM.search(t)]
    if not missing or shares is None:
        return bool(missing)
    share = shares(" ".join(missing))

    def rare(term: str) -> bool:  # a compound ('newsletter-subscription') is as common as its commonest part
        return max((share.get(part, 0.0) for part in re.findall(r"[^\W_]+", term)), default=0.0) < RARE_SHARE

    # a common word the context happens not to repeat ('many', 'open') is no sign of something only a picture shows
    return any(rare(term) for term in missing)


class RunbookLMEMemory:
    """runbook behind the harness's calls; any registered method over a store shared by equal haystacks."""

    def __init__(self, memory_params: dict[str, Any]):
        params = dict(memory_params or {})
        self.method = str(params.get("method", "r"))
        self.options = dict(params.get("options", {}))
        self.budget = parse_budget(params.get("budget", "8k"))
        self.screenshot_root = params.get("screenshot_root")
        self.parent = params.get("store_dir")
        self.counter = ReaderCounter(params.get("tokenizer"))
        self.config = json.dumps([self.method, self.options, self.screenshot_root], sort_keys=True)
        self.ids: list[str] = []
        self.waiting: list[Trajectory] = []
        """Trajectories held back while a finished store's haystack starts with the same ones."""
        self.sources: dict[tuple[str, int], str] = {}
        """(trajectory id, state index) -> the screenshot file the trajectory named."""
        self.lease = Lease(int(params.get("keep_stores", 1)))
        weakref.finalize(self, self.lease.release)

    @property
    def entry(self) -> StoreEntry | None:
        return self.lease.entry

    def insert(self, trajectory: dict[str, Any]) -> None:
        try:
            parsed = trajectory_of(trajectory, self.screenshot_root)
        except InputError as exc:
            raise RuntimeError(f"runbook could not read trajectory {trajectory.get('id')!r}: {exc}") from exc
        for state in parsed.states:
            if state.screenshot:
                self.sources[(parsed.id, state.index)] = state.screenshot
        self.ids.append(parsed.id)
        if self.entry is not None:
            if self.entry.complete:
                raise RuntimeError("runbook memory: a trajectory was inserted after the first query")
            self._insert(parsed)
            return
        self.waiting.append(parsed)
        if not STORES.shares_prefix(self.config, self.ids):
            self._build()

    def _insert(self, parsed: Trajectory) -> None:
        assert self.entry is not None
        try:
            self.entry.memory.insert(parsed)
        except InputError as exc:
            raise RuntimeError(f"runbook could not insert trajectory {parsed.id!r}: {exc}") from exc
        self.entry.ids.append(parsed.id)

    def _build(self) -> None:
        """A store of this memory's own, holding what it waited with."""
        self.lease.entry = STORES.new(self.config, self.method, self.options, self.parent)
        waiting, self.waiting = self.waiting, []
        for parsed in waiting:
            self._insert(parsed)

    def _ready(self) -> StoreEntry:
        """The store to query: a shared one with this haystack, else this memory's own (built now if it waited)."""
        if self.entry is None:
            self.lease.entry = STORES.acquire(self.config, self.ids)
            if self.entry is not None:
                self.waiting = []
            else:
                self._build()
        entry = self.entry
        assert entry is not None
        if not entry.complete:
            STORES.finish(entry)
        return entry

    def query(self, query: str, query_image: str | None = None) -> list[dict[str, str]]:
        entry = self._ready()
        context = entry.memory.query(query, budget=self.counter.cap(self.budget), image=query_image)
        retriever = getattr(entry.memory, "retriever", None)
        if is_visual(query, query_image, context, retriever.term_shares if retriever is not None else None):
            context = self._with_screenshots(context, entry)
        context = fit_context(context, self.counter.cap(self.budget), self.counter)
        self._point_images_at_sources(context, entry)
        # evidence is packed most important first, so a cut from the tail drops the least useful
        return [item for item in context.to_lme_items() if item["value"].strip()]

    def _with_screenshots(self, context: Context, entry: StoreEntry) -> Context:
        """The leading state items' own screenshots right after their text, each screenshot once, budgeted like text
        (the tail is cut). A note or an event spans a run: its first state's screenshot shows none of its evidence."""
        items = [dataclasses.replace(item) for item in context.items]
        added, shown = 0, set()
        for item in items:
            if item.kind not in ("state", "span"):
                item.screenshot = None
                continue
            if added < VISUAL_SCREENSHOTS and not item.screenshot:
                item.screenshot = _stored_screenshot(entry, item.trajectory_id, item.state_index, item.end_state_index)
            if item.screenshot in shown or added == VISUAL_SCREENSHOTS:
                item.screenshot = None
            elif item.screenshot:
                shown.add(item.screenshot)
                added += 1
        if not added:
            return context
        fitted = pack(
            context.question,
            context.budget,
            items,
            analysis=context.analysis,
            method=context.method,
            store_root=context.store_root,
            meta=dict(context.meta),
        )
        fitted.latency_s = context.latency_s
        return fitted

    def _point_images_at_sources(self, context: Context, entry: StoreEntry) -> None:
        """Screenshots named by the files the trajectories gave (they outlive the store); a store copy otherwise."""
        if not self.sources:
            return
        where = _screenshot_owners(entry)
        for item in context.items:
            owner = where.get(item.screenshot or "")
            source = self.sources.get(owner) if owner else None
            if source and os.path.isfile(source):
                item.screenshot = source

    def save(self, output_dir: Path) -> None:
        """The store as it is after the inserts, copied into the harness's memory_state folder."""
        entry = self._ready()
        target = Path(output_dir) / SAVED_STORE
        if target.exists():
            raise RuntimeError(f"runbook memory: {target} exists already; save into an empty folder")
        shutil.copytree(entry.folder / "store", target, symlinks=True)
        sources = [[tid, index, path] for (tid, index), path in sorted(self.sources.items())]
        (Path(output_dir) / SAVED_SOURCES).write_text(json.dumps(sources) + "\n")

    def load(self, input_dir: Path) -> None:
        """Query the store saved in `input_dir` (in place: its screenshots stay where the saved folder is)."""
        source = (Path(input_dir) / SAVED_STORE).resolve()  # the harness passes --load-memory-dir as given
        if not (source / "runbook.json").is_file():
            raise RuntimeError(
                f"runbook memory: {input_dir} holds no saved runbook store ({SAVED_STORE}/ is missing); it was "
                "saved without one (runbook before issue #23) or by another memory type: rebuild it with "
                "--save-memory"
            )
        if self.ids:
            raise RuntimeError("runbook memory: a saved store cannot be loaded into a memory that has trajectories")
        self.lease.release()
        saved_sources = Path(input_dir) / SAVED_SOURCES
        if saved_sources.is_file():
            self.sources = {(tid, index): path for tid, index, path in json.loads(saved_sources.read_text())}
        store = Store(source)
        memory = get_memory(self.method, store, **self.options)
        self.lease.entry = StoreEntry(source, memory, self.config, [r.id for r in store.rows()], owned=False)
        self.lease.entry.complete = True


def _stored_screenshot(entry: StoreEntry, trajectory_id: str, start: int | None, end: int | None) -> str | None:
    """The store-relative path of the first screenshot among states start..end of a trajectory, if any."""
    if start is None:
        return None
    store: Store = entry.memory.store
    with contextlib.closing(store.connect()) as conn:
        found = conn.execute(
            "SELECT t.dir, s.screenshot FROM states s JOIN trajectories t ON t.id = s.trajectory_id "
            "WHERE s.trajectory_id = ? AND s.state_index BETWEEN ? AND ? AND s.screenshot IS NOT NULL "
            "ORDER BY s.state_index LIMIT 1",
            (trajectory_id, start, end if end is not None else start),
        ).fetchone()
    if not found:
        return None
    rel = f"trajectories/{found[0]}/{found[1]}"
    return rel if os.path.isfile(store.root / rel) and not os.path.islink(store.root / rel) else None


def _screenshot_owners(entry: StoreEntry) -> dict[str, tuple[str, int]]:
    """store-relative screenshot path -> (trajectory id, state index)."""
    store: Store = entry.memory.store
    with contextlib.closing(store.connect()) as conn:
        rows = conn.execute(
            "SELECT t.dir, s.screenshot, s.trajectory_id, s.state_index FROM states s "
            "JOIN trajectories t ON t.id = s.trajectory_id WHERE s.screenshot IS NOT NULL"
        ).fetchall()
    return {f"trajectories/{d}/{shot}": (tid, index) for d, shot, tid, index in rows}


def memory_class(base: type, register: Callable[[type], type] | None = None) -> type:
    """RunbookLMEMemory as a subclass of the harness's `Memory` (or a stand-in), registered if `register` is given."""

    class RunbookMemory(base):
        """runbook, a long-term memory for web agents, as a LongMemEval-V2 memory."""

        memory_type = MEMORY_TYPE

        def __init__(self, memory_params: dict[str, object]) -> None:
            super().__init__(memory_params)
            self._runbook = RunbookLMEMemory(dict(memory_params))

        def insert(self, trajectory: dict[str, object]) -> None:
            self._runbook.insert(trajectory)

        def query(self, query: str, query_image: str | None = None) -> list[dict[str, str]]:
            return self._runbook.query(query, query_image)

        def _save_backend(self, output_dir: Path) -> None:
            self._runbook.save(output_dir)

        def _load_backend(self, input_dir: Path) -> None:
            self._runbook.load(input_dir)

    return register(RunbookMemory) if register else RunbookMemory


def register() -> type:
    """Register the `runbook` memory type with the harness importable from sys.path."""
    from memory_modules.memory import Memory, register_memory

    return memory_class(Memory, register_memory)


def _arguments(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    cut = argv.index("--") if "--" in argv else len(argv)
    ours, harness = argv[:cut], argv[cut + 1 :]
    parser = argparse.ArgumentParser(
        prog="python -m runbook.bench.integrations.lme_v2",
        description="Run runbook inside LongMemEval-V2's harness; arguments after "
        "-- go to evaluation/harness.py (reader, evaluator, ...).",
    )
    parser.add_argument("--data-root", required=True, type=Path)
    parser.add_argument("--domain", choices=["web", "enterprise"], required=True)
    parser.add_argument("--tier", choices=["small", "medium"], default="small")
    parser.add_argument("--output-dir", required=True, type=Path)
    parser.add_argument("--params", default="{}", help="memory_params as JSON (method, budget, options, ...)")
    parser.add_argument("--harness-root", type=Path, default=Path.cwd(), help="the harness checkout (default: .)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N questions of the domain")
    parser.add_argument("--question-ids", nargs="*", default=None)
    parser.add_argument(
        "--no-processor-check",
        action="store_true",
        help="start without loading the reader's processor first (the harness loads it at its first prompt)",
    )
    return parser.parse_args(ours), harness


def main(argv: list[str] | None = None) -> None:
    """The launcher: select questions and haystacks, register the type, write its config, run the harness."""
    args, harness_args = _arguments(list(sys.argv[1:] if argv is None else argv))
    sys.path.insert(0, str(args.harness_root.resolve()))
    from data.public_data import materialize_runtime_haystack, materialize_runtime_questions

    register()
    data_root = args.data_root.resolve()
    runtime = args.output_dir.resolve() / "runtime_inputs"
    runtime.mkdir(parents=True, exist_ok=True)
    selected = materialize_runtime_questions(
        data_root=data_root,
        domain=args.domain,
        question_ids=args.question_ids,
        limit=args.limit,
        output_path=runtime / "questions.json",
    )
    materialize_runtime_haystack(
        data_root=data_root, tier=args.tier, selected_questions=selected, output_path=runtime / "haystack.json"
    )
    params = {"screenshot_root": str(data_root), **json.loads(args.params)}
    (runtime / "memory_config.json").write_text(
        json.dumps({"memory_type": MEMORY_TYPE, "memory_params": params}, indent=2) + "\n"
    )
    sys.argv = [
        "evaluation.harness",
        "--domain",
        args.domain,
        "--questions-path",
        str(runtime / "questions.json"),
        "--haystack-path",
        str(runtime / "haystack.json"),
        "--trajectories-path",
        str(data_root / "trajectories.jsonl"),
        "--memory-config-path",
        str(runtime / "memory_config.json"),
        "--output-dir",
        str(args.output_dir.resolve()),
        *harness_args,
    ]
    import evaluation.harness as harness

    if not args.no_processor_check:
        check_reader_processor(harness)
    harness.main()


def check_reader_processor(harness) -> None:
    """Load the reader's processor now, as the harness will at its first prompt: that is after it has inserted the
    whole haystack, so a processor that cannot load (no hub access, no cached files) failed the run minutes in."""
    load = getattr(harness, "get_memory_context_processor", None)  # the harness's own loader (be15ea6)
    if load is None:
        return
    try:
        load()
    except Exception as exc:  # whatever transformers raises: all mean the processor is not there
        raise SystemExit(
            f"the harness's reader processor does not load ({type(exc).__name__}: {exc}); the harness loads it at "
            "its first prompt, after inserting the whole haystack. Fill the Hugging Face cache with its files and "
            "run with HF_HUB_OFFLINE=1 (README: 'Inside LongMemEval-V2's own harness'), or pass "
            "--no-processor-check to start anyway"
        ) from None


if __name__ == "__main__":
    main()
