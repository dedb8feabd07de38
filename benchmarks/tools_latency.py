"""Latency of the sandbox tools (tools/search, tools/show) on a store: median and p95 over repeated runs.

Usage: python benchmarks/tools_latency.py STORE [--runs 20] [--trajectory ID]
Each call is a fresh process, as in the sandbox. The tools run under this Python (not a version-manager shim,
which adds ~100 ms per process); the floor lines show what Python start-up and one bare ripgrep pass cost.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

TOOLS = Path(__file__).resolve().parents[1] / "tools"

SEARCHES = [
    ("rare literal", ["-F", "Lumaflex"]),
    ("phrase", ["Website url"]),
    ("common word", ["order"]),
    ("ignore case", ["-i", "grand total"]),
    ("field error", ["Timeout", "--field", "error"]),
    ("field text", ["Website url", "--field", "text"]),
    ("newest first", ["Website url", "--sort", "newest"]),
    ("count mode", ["order", "--count"]),
    ("one site", ["price", "--site", "shopping_admin"]),
    ("json", ["Website url", "--json"]),
]


def first_trajectory(store: Path) -> str:
    conn = sqlite3.connect(f"file:{store / 'catalog.sqlite'}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT id FROM trajectories ORDER BY n_states DESC, seq LIMIT 1").fetchone()[0]
    finally:
        conn.close()


def timed(cmd: list, env: dict, runs: int) -> list:
    subprocess.run(cmd, env=env, capture_output=True)  # warm the page cache
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.run(cmd, env=env, capture_output=True)
        times.append(time.perf_counter() - start)
        if proc.returncode not in (0, 1):
            raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.decode()[-400:]}")
    return times


def p95(values: list) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def report(label: str, times: list) -> None:
    print(f"{label:<34} median {statistics.median(times) * 1000:6.0f} ms   p95 {p95(times) * 1000:6.0f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("store", type=Path)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--trajectory", help="trajectory for show (default: the longest)")
    args = ap.parse_args()
    store = args.store.resolve()
    env = dict(os.environ, RUNBOOK_STORE_DIR=str(store), PYTHONPATH=str(TOOLS))
    sys.path.insert(0, str(TOOLS))
    import rbk  # noqa: E402  (for the ripgrep binary the tools will use)

    rg = rbk.ripgrep_binary()
    tid = args.trajectory or first_trajectory(store)
    print(f"store {store}, {args.runs} runs each, python {sys.executable}, rg {rg}")
    report("floor: python start + import rbk", timed([sys.executable, "-c", "import rbk"], env, args.runs))
    report(
        "floor: bare rg --count pass",
        timed([rg, "--count", "-e", "order", "-g", "**/states/*.md", str(store / "trajectories")], env, args.runs),
    )
    for label, extra in SEARCHES:
        report(f"search {label}", timed([sys.executable, str(TOOLS / "search"), *extra], env, args.runs))
    for label, extra in [
        ("overview", [tid]),
        ("one state", [tid, "1"]),
        ("span 0-3", [tid, "0-3"]),
        ("--grep", [tid, "--grep", "link"]),
    ]:
        report(f"show {label}", timed([sys.executable, str(TOOLS / "show"), *extra], env, args.runs))


if __name__ == "__main__":
    main()
