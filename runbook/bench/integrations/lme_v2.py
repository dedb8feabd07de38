"""runbook inside LongMemEval-V2's own harness (github.com/xiaowu0162/LongMemEval-V2).

The harness takes memories that subclass its `memory_modules.memory.Memory` and are registered under a
`memory_type`; it builds one from `{"memory_type": "runbook", "memory_params": {...}}`, streams the haystack's
trajectories into `insert(trajectory: dict)`, then times `query(query, query_image=None)`, which returns
`[{"type": "text"|"image", "value": ...}]` (most important first: the harness drops whole items from the tail).

Run it from a checkout of the harness (its data prepared as its README says):

    cd LongMemEval-V2
    python -m runbook.bench.integrations.lme_v2 --data-root "$DATA_ROOT" --domain web --tier small \\
        --output-dir runs/runbook_r_web_small --params '{"method": "r", "budget": "8k"}' -- \\
        --model Qwen/Qwen3.5-9B --base-url "$READER_BASE_URL" --evaluator-model gpt-5.2 \\
        --memory-context-max-tokens 8000

That selects the domain's questions and their haystacks with the harness's own data functions, registers the
`runbook` memory type, writes its memory config, and runs `evaluation/harness.py` with everything after `--`.
`memory_params`: `method` (a name in runbook.memory.METHODS, default r), `budget` (default 8k), `options`
(the method's keyword options), `screenshot_root` (where relative screenshot paths start; the harness gives custom
types no data root, so the launcher sets it to --data-root), `store_dir` (a parent folder for the stores; default a
temporary folder, removed at exit).

Nothing here imports the harness until `register()` or the launcher runs, so runbook works without it.
"""

from __future__ import annotations

import argparse
import atexit
import json
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...budget import parse_budget
from ...errors import InputError
from ...memory import get_memory
from ...store import Store
from ...trajectory.model import Trajectory, trajectory_from_dict
from ...trajectory.readers import content_form

MEMORY_TYPE = "runbook"


def trajectory_of(obj: dict, screenshot_root: str | None) -> Trajectory:
    """A harness trajectory (the `states` form or the `content` + `metadata` form) as runbook's Trajectory."""
    if content_form.is_content_form(obj):
        return content_form.from_content_form(obj, base_dir=screenshot_root)
    return trajectory_from_dict(obj, base_dir=screenshot_root)


class RunbookLMEMemory:
    """runbook behind the harness's two calls; any registered method over a store of its own."""

    def __init__(self, memory_params: dict[str, Any]):
        params = dict(memory_params or {})
        self.method = str(params.get("method", "r"))
        self.budget = parse_budget(params.get("budget", "8k"))
        self.screenshot_root = params.get("screenshot_root")
        parent = params.get("store_dir")
        if parent:
            Path(parent).mkdir(parents=True, exist_ok=True)
        # a fresh store per memory: the harness builds one memory per question when haystacks differ
        self.folder = Path(tempfile.mkdtemp(prefix="runbook-lme-", dir=parent))
        if not parent:
            atexit.register(shutil.rmtree, self.folder, True)
        self.memory = get_memory(self.method, Store(self.folder / "store", create=True), **params.get("options", {}))

    def insert(self, trajectory: dict[str, Any]) -> None:
        try:
            self.memory.insert(trajectory_of(trajectory, self.screenshot_root))
        except InputError as exc:
            raise RuntimeError(f"runbook could not read trajectory {trajectory.get('id')!r}: {exc}") from exc

    def query(self, query: str, query_image: str | None = None) -> list[dict[str, str]]:
        context = self.memory.query(query, budget=self.budget, image=query_image)
        # evidence is packed most important first, so the harness's cut from the tail drops the least useful
        return [item for item in context.to_lme_items() if item["value"].strip()]


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
    from evaluation.harness import main as harness_main

    harness_main()


if __name__ == "__main__":
    main()
