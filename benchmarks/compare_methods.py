"""Compare methods (r, auto, c, bm25) on question sets, scored by ../shared/tools/score_contexts.py.

Each method's Memory is called in-process (latency = the query's own time, as score_contexts reads `latency_s`);
a method that cannot be built is reported as missing, never faked.

usage: python benchmarks/compare_methods.py STORE [--budget 8k] [--methods r,auto,c,bm25] [--questions F.jsonl ...]
                                                  [--per-question] [--policy offline] [--warm]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
DEFAULT_QUESTIONS = [SHARED / "data" / "questions_dev_webarena.jsonl", SHARED / "data" / "questions_dev_infinity.jsonl"]


def load_scorer():
    """score_contexts.py imported by path, so that the figures are computed by the very same functions."""
    path = SHARED / "tools" / "score_contexts.py"
    spec = importlib.util.spec_from_file_location("score_contexts", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def score_one(sc, q: dict, obj: dict) -> dict:
    text, items = sc.context_text(obj)
    state_items = [it for it in items if it.get("kind") == "state"]  # single states only, no note/event spans
    phrases = q.get("answer_phrases") or []
    found = all(sc.contains(text, p) for p in phrases) if phrases and not q.get("visual_only") else None
    ev = q.get("evidence") or []
    return {
        "id": q["id"],
        "type": q["question_type"],
        "abs": q["question_type"].endswith("-abs"),
        "found": found,
        "evidence": all(sc.cites(items, e) for e in ev) if ev else None,
        "cited": sum(sc.cites(items, e) for e in ev),
        "n_evidence": len(ev),
        "evidence_by_states": all(sc.cites(state_items, e) for e in ev) if ev else None,
        "latency": obj.get("latency_s", 0.0),
        "tokens": obj.get("tokens"),
    }


def summarise(rows: list[dict], budget: int) -> dict:
    ans = [r for r in rows if not r["abs"] and r["found"] is not None]
    evs = [r for r in rows if r["evidence"] is not None]
    lat = sorted(r["latency"] for r in rows)
    return {
        "n": len(rows),
        "phrases": sum(r["found"] for r in ans) / len(ans) if ans else float("nan"),
        "evidence": sum(r["evidence"] for r in evs) / len(evs) if evs else float("nan"),
        "evidence_states": (sum(r["cited"] for r in evs) / sum(r["n_evidence"] for r in evs)) if evs else 0.0,
        "evidence_by_states": sum(r["evidence_by_states"] for r in evs) / len(evs) if evs else float("nan"),
        "p50": statistics.median(lat) if lat else float("nan"),
        "p95": lat[int(0.95 * (len(lat) - 1))] if lat else float("nan"),
        "within_budget": sum(1 for r in rows if (r["tokens"] or 0) <= budget),
    }


def run_method(method: str, store, questions: list[dict], budget: int, options: dict, sc) -> list[dict] | str:
    from runbook.memory import get_memory

    try:
        memory = get_memory(method, store, **options)
    except Exception as exc:  # a method that is not built yet is reported, not faked
        return f"missing ({type(exc).__name__}: {str(exc)[:80]})"
    rows = []
    for q in questions:
        image = None
        if q.get("image"):  # beside its question file (a generated set), else in the shared data's set folder
            beside = Path(q["_file"]).parent / q["image"]
            image = str(beside if beside.exists() else SHARED / "data" / q.get("set", "infinity") / q["image"])
        start = time.perf_counter()
        try:
            context = memory.query(q["question"], budget=budget, image=image)
        except Exception as exc:
            return f"failed on {q['id']} ({type(exc).__name__}: {str(exc)[:80]})"
        obj = context.to_json()
        obj["latency_s"] = obj.get("latency_s") or (time.perf_counter() - start)
        rows.append(score_one(sc, q, obj))
    if hasattr(memory, "close"):
        memory.close()  # a spare sandbox kept warm
    return rows


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store")
    parser.add_argument("--budget", default="8k")
    parser.add_argument("--methods", default="r,bm25,c")
    parser.add_argument("--questions", nargs="*", default=[str(p) for p in DEFAULT_QUESTIONS])
    parser.add_argument("--policy", default="offline", help="method c's policy")
    parser.add_argument("--per-question", action="store_true")
    parser.add_argument(
        "--warm",
        action="store_true",
        help="method c (and auto's c) keeps its next sandbox started, as a long-lived memory does",
    )
    args = parser.parse_args(argv)

    sys.path.insert(0, str(ROOT))
    from runbook.budget import parse_budget
    from runbook.store import Store

    sc = load_scorer()
    budget = parse_budget(args.budget)
    store = Store(args.store)
    questions = [
        {**json.loads(line), "_file": f}
        for f in args.questions
        for line in Path(f).read_text().splitlines()
        if line.strip()
    ]
    print(f"{len(questions)} questions, budget {budget}, store {args.store}")
    print(
        "phrases: all answer phrases in the context (answerable questions); evidence: every gold state cited;\n"
        "ev.states: share of gold states cited; ev.single: evidence counting single-state items only"
    )
    print(
        f"{'method':8s} {'phrases':>8s} {'evidence':>9s} {'ev.states':>9s} {'ev.single':>9s} {'p50 ms':>8s} "
        f"{'p95 ms':>8s} budget"
    )
    by_method: dict[str, list[dict]] = {}
    for method in args.methods.split(","):
        options = {"policy": args.policy, "warm": args.warm} if method in ("c", "auto") else {}
        rows = run_method(method, store, questions, budget, options, sc)
        if isinstance(rows, str):
            print(f"{method:8s} {rows}")
            continue
        by_method[method] = rows
        s = summarise(rows, budget)
        print(
            f"{method:8s} {s['phrases']:8.3f} {s['evidence']:9.3f} {s['evidence_states']:9.3f} "
            f"{s['evidence_by_states']:9.3f} "
            f"{s['p50'] * 1000:8.0f} {s['p95'] * 1000:8.0f} {s['within_budget']}/{s['n']}"
        )
        if args.per_question:
            for r in rows:
                print(
                    f"    {r['id']:12s} {r['type'][:22]:22s} found={r['found']!s:5s} "
                    f"cited={r['cited']}/{r['n_evidence']} {r['latency'] * 1000:6.0f} ms"
                )

    print_per_type(by_method)


def print_per_type(by_method: dict[str, list[dict]]) -> None:
    """Answer phrases / evidence per question type, one column per method."""
    if not by_method:
        return
    types = sorted({r["type"] for rows in by_method.values() for r in rows})
    print(f"\n{'question type':26s} {'n':>4s} " + " ".join(f"{m:>13s}" for m in by_method))
    for kind in types:
        cells = []
        for rows in by_method.values():
            of_kind = [r for r in rows if r["type"] == kind]
            found = [r["found"] for r in of_kind if r["found"] is not None]
            cited = [r["evidence"] for r in of_kind if r["evidence"] is not None]
            rate = lambda v: f"{sum(v) / len(v):.2f}" if v else "  - "  # noqa: E731
            cells.append(f"{rate(found):>6s}/{rate(cited):<6s}")
        n = sum(1 for r in next(iter(by_method.values())) if r["type"] == kind)
        print(f"{kind:26s} {n:4d} " + " ".join(f"{c:>13s}" for c in cells))
    print("(cells: answer phrases / evidence)")


if __name__ == "__main__":
    main(sys.argv[1:])
