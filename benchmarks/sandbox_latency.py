"""Sandbox latency: start (one per query) and per-call round trips, `true` and an `rg` search over a store.

Usage:  python benchmarks/sandbox_latency.py STORE_DIR [--backend auto|docker|bwrap|local] [--runs 30] [--pattern P]
Goal:   start < 1 s, exec < 100 ms.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runbook.sandbox import NAMES, get_sandbox  # noqa: E402


def summary(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"median {statistics.median(ordered) * 1000:7.1f} ms   p95 {p95 * 1000:7.1f} ms   (n={len(ordered)})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("store", type=Path)
    parser.add_argument("--backend", choices=NAMES, default="auto")
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--pattern", default="checkout", help="what rg searches for (case-insensitive)")
    args = parser.parse_args()

    starts, trues, searches = [], [], []
    hits = ""
    backend = args.backend
    for _ in range(max(3, args.runs // 10)):  # a few whole queries: start is paid once per query
        began = time.perf_counter()
        with get_sandbox(args.backend, args.store) as box:
            starts.append(time.perf_counter() - began)
            backend = box.name
            for _ in range(args.runs // max(3, args.runs // 10) + 1):
                began = time.perf_counter()
                assert box.exec("true", timeout=10).exit_code == 0
                trues.append(time.perf_counter() - began)
                began = time.perf_counter()
                store = str(args.store.resolve()) if box.name == "local" else "/store"
                result = box.exec(["rg", "-i", "-c", args.pattern, store], timeout=30)
                searches.append(time.perf_counter() - began)
                hits = f"{len(result.output.splitlines())} files matched" + (" (cut)" if result.truncated else "")
    print(f"backend {backend}, store {args.store}")
    print(f"start (container/jail up, ready)  {summary(starts)}")
    print(f"exec `true` round trip             {summary(trues)}")
    print(f"exec `rg -i -c {args.pattern}`   {summary(searches)}   {hits}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
