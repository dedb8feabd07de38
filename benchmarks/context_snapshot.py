"""Save every context a method returns for a question set, or compare two saved snapshots item by item.

A refactoring that claims "behaviour unchanged" shows it here: the same store, questions and methods give the same
contexts (everything but timings and transcript paths), question by question.

usage: python benchmarks/context_snapshot.py save STORE OUT.jsonl [--methods r,auto,c] [--budget 8k]
                                                 [--questions F.jsonl ...] [--warm]
       python benchmarks/context_snapshot.py diff OLD.jsonl NEW.jsonl
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
DEFAULT_QUESTIONS = sorted((SHARED / "data").glob("questions_dev*.jsonl"))
# what differs between two runs of the same query without the context differing
VOLATILE_META = ("agent_seconds", "transcript", "timings")


def stable_view(obj: dict) -> dict:
    """The context without its timings: what must not change when behaviour does not."""
    view = {k: v for k, v in obj.items() if k != "latency_s"}
    view["meta"] = {k: v for k, v in (obj.get("meta") or {}).items() if k not in VOLATILE_META}
    return view


def digest(view: dict) -> str:
    return hashlib.sha256(json.dumps(view, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]


def image_path(q: dict, question_file: Path) -> str | None:
    if not q.get("image"):
        return None
    beside = question_file.parent / q["image"]
    return str(beside if beside.exists() else SHARED / "data" / q.get("set", "infinity") / q["image"])


def save(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(ROOT))
    from runbook.budget import parse_budget
    from runbook.memory import get_memory
    from runbook.store import Store

    store = Store(args.store)
    budget = parse_budget(args.budget)
    files = [Path(f) for f in args.questions]
    questions = [(json.loads(line), f) for f in files for line in f.read_text().splitlines() if line.strip()]
    with open(args.out, "w") as out:
        for method in args.methods.split(","):
            options = {"policy": "offline", "warm": args.warm} if method in ("c", "auto") else {}
            memory = get_memory(method, store, **options)
            started = time.perf_counter()
            for q, f in questions:
                context = memory.query(q["question"], budget=budget, image=image_path(q, f))
                view = stable_view(context.to_json())
                out.write(
                    json.dumps(
                        {
                            "method": method,
                            "id": q["id"],
                            "hash": digest(view),
                            "latency_s": context.to_json().get("latency_s"),
                            "context": view,
                        },
                        ensure_ascii=False,
                    )
                    + "\n"
                )
            if hasattr(memory, "close"):
                memory.close()
            print(f"{method}: {len(questions)} questions in {time.perf_counter() - started:.1f} s", file=sys.stderr)


def load(path: str) -> dict[tuple[str, str], dict]:
    return {(r["method"], r["id"]): r for r in map(json.loads, Path(path).read_text().splitlines())}


def method_hash(rows: dict[tuple[str, str], dict], method: str) -> str:
    """One hash of every context of `method`, in question order."""
    joined = "".join(r["hash"] for key, r in sorted(rows.items()) if key[0] == method)
    return hashlib.sha256(joined.encode()).hexdigest()[:16]


def diff(args: argparse.Namespace) -> int:
    old, new = load(args.old), load(args.new)
    changed = 0
    for key in sorted(old.keys() | new.keys()):
        a, b = old.get(key), new.get(key)
        if a is None or b is None or a["hash"] != b["hash"]:
            changed += 1
            print(f"{key[0]:5s} {key[1]:14s} {'missing' if a is None or b is None else 'differs'}")
    for method in sorted({m for m, _ in old} | {m for m, _ in new}):
        print(
            f"{method}: old {method_hash(old, method)}  new {method_hash(new, method)}  "
            f"({sum(1 for k in new if k[0] == method)} contexts)"
        )
    print(f"{changed} of {len(old.keys() | new.keys())} contexts differ")
    return 1 if changed else 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    p_save = commands.add_parser("save")
    p_save.add_argument("store")
    p_save.add_argument("out")
    p_save.add_argument("--methods", default="r,auto,c")
    p_save.add_argument("--budget", default="8k")
    p_save.add_argument("--questions", nargs="*", default=[str(p) for p in DEFAULT_QUESTIONS])
    p_save.add_argument("--warm", action="store_true")
    p_diff = commands.add_parser("diff")
    p_diff.add_argument("old")
    p_diff.add_argument("new")
    args = parser.parse_args(argv)
    if args.command == "save":
        save(args)
        return 0
    return diff(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
