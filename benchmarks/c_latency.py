"""Where method C's time goes: each query's latency broken into its parts, p50 and p95 over a question set.

usage: python benchmarks/c_latency.py STORE [--questions F.jsonl ...] [--n N] [--seed S] [--budget 8k]
                                           [--sandbox docker|bwrap|local] [--slowest K]

A query (memory/coding_agent.py) is, in order:
  start      method R's ranking on the host, while the query's sandbox starts (warm: a spare started ahead);
             the longer of the two
  calls      each tool call (the offline planner: `plan`, sometimes one `search`), as the host waits for it:
    exec       the sandbox's round trip: `docker exec` (or bwrap's jail) and runbook's wrapper, measured as a
               call of `true`
    startup    the program's interpreter and imports (`python3 -c 'import runbook.core.plan'` less `true`)
    work       what is left: rbplan's own work (catalog, scan, choice, findings, detail; split below by running
               the same request in this process)
  pack       from `finish` to the context: spans expanded from the store, pages fitted, packing
Inside rbplan (the same requests replayed in this process, on the host, against the same store):
  catalog    load_catalog (catalog.sqlite: every trajectory and state row)
  scan       scan_output (ripgrep over every state, BM25 with the goal, url and title)
  findings   plan_findings, compared runs, recovery (pages read for counts, values, named pages)
  detail     detail_output (the chosen states read)
Also prints R's latency (the same questions, method r) and the K slowest C queries with their parts.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
DEFAULT_QUESTIONS = sorted((SHARED / "data").glob("questions_dev*.jsonl"))


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else float("nan")


def transcript_parts(path: str) -> dict:
    """start, per-call seconds (by tool name) and pack, read from one query's transcript."""
    records = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    parts: dict = {"calls": [], "requests": []}
    stop_t = None
    for rec in records:
        if rec["type"] == "start":
            parts["start"] = rec["t"]
        elif rec["type"] == "tool" and rec.get("name") != "finish":
            parts["calls"].append((rec["name"], rec.get("seconds", 0.0)))
            if rec.get("name") == "plan":
                parts["requests"].append(rec["arguments"]["request"])
        elif rec["type"] == "stop":
            stop_t = rec["t"]
        elif rec["type"] == "result" and stop_t is not None:
            parts["pack"] = rec["t"] - stop_t
    return parts


def sandbox_floor(store: str, backend: str, runs: int = 7) -> tuple[float, float]:
    """(a call of `true`, a call that imports rbplan's modules): medians over `runs` calls in one sandbox."""
    from runbook.sandbox import get_sandbox

    true_s, import_s = [], []
    with get_sandbox(backend, store) as box:
        for _ in range(runs):
            t = time.perf_counter()
            box.exec(["true"], timeout=30)
            true_s.append(time.perf_counter() - t)
            t = time.perf_counter()
            box.exec(["python3", "-c", "import runbook.core.plan"], timeout=30)
            import_s.append(time.perf_counter() - t)
    return statistics.median(true_s), statistics.median(import_s)


_REPLAY = """
import io, json, sys, time
from contextlib import redirect_stdout
t = time.perf_counter()
from runbook.core import plan as rbplan
spent = {"imports": time.perf_counter() - t}
def timed(name, key):
    original = getattr(rbplan, name)
    def wrapper(*args, **kwargs):
        t = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            spent[key] = spent.get(key, 0.0) + time.perf_counter() - t
    setattr(rbplan, name, wrapper)
for name, key in (("load_catalog", "catalog"), ("scan_output", "scan"), ("plan_findings", "findings"),
                  ("compared_runs", "findings"), ("recovery_findings", "findings"), ("detail_output", "detail")):
    timed(name, key)
request = rbplan.PlanRequest.from_json(json.loads(sys.stdin.read()))
t = time.perf_counter()
with redirect_stdout(io.StringIO()):
    rbplan.plan(request)
spent["work"] = time.perf_counter() - t
print(json.dumps(spent))
"""


def replay(request: dict, store: str) -> dict:
    """rbplan's parts for one request: run as the sandbox runs it (a fresh interpreter that sees `runbook` as a
    namespace package holding only the core), on the host, against the same store."""
    with tempfile.TemporaryDirectory() as lib:
        os.mkdir(os.path.join(lib, "runbook"))
        os.symlink(ROOT / "runbook" / "core", os.path.join(lib, "runbook", "core"))
        env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": lib, "RUNBOOK_STORE_DIR": store, "LANG": "C.UTF-8"}
        out = subprocess.run(
            [sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {lib!r})\n{_REPLAY}"],
            input=json.dumps(request),
            capture_output=True,
            text=True,
            env=env,
            check=True,
        ).stdout
    return json.loads(out)


def load_questions(files: list[str], n: int | None, seed: int) -> list[dict]:
    questions = [json.loads(line) for f in files for line in Path(f).read_text().splitlines() if line.strip()]
    if n and n < len(questions):
        questions = random.Random(seed).sample(questions, n)
    return questions


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("store")
    parser.add_argument("--questions", nargs="*", default=[str(p) for p in DEFAULT_QUESTIONS])
    parser.add_argument("--n", type=int, default=None, help="a random sample of this many questions")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--budget", default="8k")
    parser.add_argument("--sandbox", default=None, help="the backend (default: the settings', auto)")
    parser.add_argument("--slowest", type=int, default=5)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from runbook.memory import get_memory
    from runbook.memory.coding_agent import CodingAgentMemory
    from runbook.store import Store

    store = Store(args.store)
    questions = load_questions(args.questions, args.n, args.seed)
    transcripts = Path(f"/tmp/runbook-c-latency-{os.getpid()}")
    options = {"sandbox": args.sandbox} if args.sandbox else {}
    c = CodingAgentMemory(store, policy="offline", warm=True, transcripts=transcripts, **options)
    r = get_memory("r", store)
    rows = []
    for q in questions:
        t = time.perf_counter()
        context = c.query(q["question"], budget=args.budget)
        total = time.perf_counter() - t
        parts = transcript_parts(context.meta["transcript"])
        t = time.perf_counter()
        r.query(q["question"], budget=args.budget)
        rows.append({"id": q.get("id", ""), "question": q["question"], "c": total, "r": time.perf_counter() - t,
                     "box": context.meta.get("sandbox"), **parts})  # fmt: skip
    c.close()
    backend = rows[0]["box"] if rows else "docker"
    exec_s, import_s = sandbox_floor(str(store.root), backend)
    for row in rows:
        inside = [replay(req, str(store.root)) for req in row["requests"]]
        keys = ("imports", "catalog", "scan", "findings", "detail", "work")
        row["inside"] = {k: sum(p.get(k, 0.0) for p in inside) for k in keys}
        row["calls_s"] = sum(s for _, s in row["calls"])
        row["n_calls"] = len(row["calls"])
    report(rows, exec_s, import_s, args.slowest)
    return 0


def report(rows: list[dict], exec_s: float, import_s: float, slowest: int) -> None:
    load = os.getloadavg()
    print(f"{len(rows)} questions; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; sandbox {rows[0]['box']}")
    print(f"sandbox floor: a call of `true` {exec_s * 1000:.0f} ms; importing rbplan's modules adds "
          f"{(import_s - exec_s) * 1000:.0f} ms")  # fmt: skip

    def line(name: str, values: list[float]) -> None:
        p50, p95, mean = pct(values, 0.5), pct(values, 0.95), statistics.mean(values)
        print(f"  {name:36s} p50 {p50:6.3f} s   p95 {p95:6.3f} s   mean {mean:6.3f} s")

    print("method C, per query:")
    line("total", [r["c"] for r in rows])
    line("start (R's ranking | sandbox start)", [r.get("start", 0.0) for r in rows])
    line("tool calls, as the host waits", [r["calls_s"] for r in rows])
    line("  of which exec round trips", [exec_s * r["n_calls"] for r in rows])
    line("  of which interpreter + imports", [(import_s - exec_s) * r["n_calls"] for r in rows])
    line("  of which rbplan's work (replayed)", [r["inside"]["work"] for r in rows])
    for key in ("catalog", "scan", "findings", "detail"):
        line(f"    {key}", [r["inside"][key] for r in rows])
    parts = ("catalog", "scan", "findings", "detail")
    line("    choice, output", [r["inside"]["work"] - sum(r["inside"][k] for k in parts) for r in rows])
    line("  the rest (search calls; load)", [
        max(0.0, r["calls_s"] - import_s * r["n_calls"] - r["inside"]["work"]) for r in rows])  # fmt: skip
    line("pack (finish -> context)", [r.get("pack", 0.0) for r in rows])
    print("method R, per query:")
    line("total", [r["r"] for r in rows])
    print(f"the {slowest} slowest C queries:")
    for r in sorted(rows, key=lambda r: -r["c"])[:slowest]:
        inside = ", ".join(f"{k} {v:.2f}" for k, v in r["inside"].items())
        calls = ", ".join(f"{n} {s:.2f}" for n, s in r["calls"])
        print(f"  {r['c']:5.2f} s  {r['id']}: start {r.get('start', 0):.2f}, calls [{calls}], rbplan [{inside}], "
              f"pack {r.get('pack', 0):.2f}: {r['question'][:90]}")  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
