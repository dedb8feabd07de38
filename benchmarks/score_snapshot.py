"""Score saved contexts (a context_snapshot.py file) the way ../shared/tools/score_contexts.py scores live queries,
per method and per question type, and diff two snapshots question by question.

    answer phrases   every gold answer phrase in the context (answerable questions)
    depth            median tokens read before every phrase has appeared (answerable questions found)
    evidence         every gold evidence state cited
    cited            a gold evidence state cited (answerable questions)
    excerpt recall   of the answerable questions where a gold state is cited, the share whose phrases all appear

usage: python benchmarks/score_snapshot.py SNAPSHOT.jsonl [--questions F.jsonl ...] [--against OLD.jsonl]
                                                          [--per-type] [--misses METHOD]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
from pathlib import Path

from runbook.budget import count_tokens

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
DEFAULT_QUESTIONS = sorted((SHARED / "data").glob("questions_dev*.jsonl"))


def load_scorer():
    """score_contexts.py imported by path, so that the figures are computed by the very same functions."""
    spec = importlib.util.spec_from_file_location("score_contexts", SHARED / "tools" / "score_contexts.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def score(sc, q: dict, context: dict) -> dict:
    text, items = sc.context_text(context)
    phrases = q.get("answer_phrases") or []
    answerable = bool(phrases) and not q["question_type"].endswith("-abs") and not q.get("visual_only")
    evidence = q.get("evidence") or []
    return {
        "id": q["id"],
        "type": q["question_type"],
        "found": all(sc.contains(text, p) for p in phrases) if answerable else None,
        "evidence": all(sc.cites(items, e) for e in evidence) if evidence else None,
        "cited": any(sc.cites(items, e) for e in evidence) if evidence else None,
        "items": len(items),
        "tokens": context.get("tokens") or 0,
        "depth": answer_depth(sc, text, phrases) if answerable else None,
    }


def answer_depth(sc, text: str, phrases: list[str]) -> int | None:
    """Tokens of the context's text read before every phrase has appeared (None when it never shows them all)."""
    if not all(sc.contains(text, p) for p in phrases):
        return None
    low, high = 0, len(text)
    while low < high:  # the shortest head of the text that shows every phrase
        mid = (low + high) // 2
        if all(sc.contains(text[:mid], p) for p in phrases):
            high = mid
        else:
            low = mid + 1
    return count_tokens(text[:low])


def rate(values: list) -> str:
    values = [v for v in values if v is not None]
    return f"{sum(values) / len(values):.3f}" if values else "  -  "


def summary(rows: list[dict]) -> dict:
    answerable = [r for r in rows if r["found"] is not None]
    cited = [r for r in answerable if r["cited"]]
    return {
        "n": len(rows),
        "phrases": rate([r["found"] for r in answerable]),
        "n_answerable": len(answerable),
        "evidence": rate([r["evidence"] for r in rows]),
        "cited": rate([r["cited"] for r in answerable]),
        "excerpt_recall": f"{sum(r['found'] for r in cited)}/{len(cited)}",
        "items": f"{statistics.mean(r['items'] for r in rows):.1f}" if rows else "-",
        "depth": f"{statistics.median(depths):.0f}" if (depths := [r["depth"] for r in rows if r["depth"]]) else "-",
    }


def load(path: str) -> dict[tuple[str, str], dict]:
    return {(r["method"], r["id"]): r for r in map(json.loads, Path(path).read_text().splitlines())}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("snapshot")
    parser.add_argument("--questions", nargs="*", default=[str(p) for p in DEFAULT_QUESTIONS])
    parser.add_argument("--against", help="an older snapshot: list the questions whose scores changed")
    parser.add_argument("--per-type", action="store_true")
    parser.add_argument("--misses", metavar="METHOD", help="list the answerable questions whose phrases METHOD missed")
    args = parser.parse_args(argv)
    sc = load_scorer()
    questions = {q["id"]: q for f in args.questions for q in map(json.loads, Path(f).read_text().splitlines())}
    snapshot = load(args.snapshot)
    methods = sorted({m for m, _ in snapshot})
    scored = {
        m: [score(sc, questions[i], r["context"]) for (mm, i), r in snapshot.items() if mm == m and i in questions]
        for m in methods
    }
    print(
        f"{'method':6s} {'n':>4s} {'phrases':>8s} {'(of)':>5s} {'evidence':>9s} {'cited':>6s} {'excerpt':>8s} "
        f"{'items':>6s} {'depth':>6s} {'p50':>6s}"
    )
    for m in methods:
        s = summary(scored[m])
        lat = sorted(r.get("latency_s") or 0.0 for (mm, _), r in snapshot.items() if mm == m)
        p50 = statistics.median(lat) if lat else float("nan")
        print(
            f"{m:6s} {s['n']:4d} {s['phrases']:>8s} {s['n_answerable']:5d} {s['evidence']:>9s} {s['cited']:>6s} "
            f"{s['excerpt_recall']:>8s} {s['items']:>6s} {s['depth']:>6s} {p50:6.2f}"
        )
    if args.per_type:
        types = sorted({r["type"] for rows in scored.values() for r in rows})
        print(f"\n{'type':28s} " + " ".join(f"{m:>15s}" for m in methods) + "   (phrases / evidence, n)")
        for t in types:
            cells = []
            for m in methods:
                rows = [r for r in scored[m] if r["type"] == t]
                cells.append(f"{rate([r['found'] for r in rows])}/{rate([r['evidence'] for r in rows])}")
            n = sum(1 for r in scored[methods[0]] if r["type"] == t)
            print(f"{t:28s} " + " ".join(f"{c:>15s}" for c in cells) + f"   {n}")
    if args.against:
        old = load(args.against)
        print("\nper question, old -> new (found phrases / all evidence cited):")
        for m in methods:
            for (mm, qid), r in sorted(snapshot.items()):
                if mm != m or (m, qid) not in old or qid not in questions:
                    continue
                a, b = score(sc, questions[qid], old[(m, qid)]["context"]), score(sc, questions[qid], r["context"])
                if (a["found"], a["evidence"]) != (b["found"], b["evidence"]):
                    print(
                        f"  {m:5s} {qid:14s} {a['type'][:24]:24s} phrases {a['found']!s:5s} -> {b['found']!s:5s}  "
                        f"evidence {a['evidence']!s:5s} -> {b['evidence']!s:5s}"
                    )
    if args.misses:
        print_misses(sc, questions, snapshot, args.misses)
    return 0


def print_misses(sc, questions: dict, snapshot: dict, method: str) -> None:
    print(f"\n{method}'s misses (cited: a gold state is in the context; missing: phrases not shown):")
    for (mm, qid), r in sorted(snapshot.items()):
        if mm != method or qid not in questions:
            continue
        q, s = questions[qid], score(sc, questions[qid], r["context"])
        if s["found"] is False:
            text, _ = sc.context_text(r["context"])
            missing = [p for p in q["answer_phrases"] if not sc.contains(text, p)]
            print(f"  {qid:14s} {s['type'][:24]:24s} cited {s['cited']!s:5s} missing {missing}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
