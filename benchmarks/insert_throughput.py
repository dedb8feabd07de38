"""Insert throughput and peak memory for the 810 WebArena trajectories (177 MB of JSON).

usage: python benchmarks/insert_throughput.py [SOURCE.jsonl.gz] [--workers N] [--pools]
Prints input MB/s (uncompressed JSON), trajectories/s, and peak RSS of the writer and of its workers.
Goal on a 2-core machine (issue 31): at least 30 MB/s of JSON for the two real sets (180.5 MB: at most 6 s), peak RSS
under 0.5 GB. Measured: 5.0-5.3 MB/s with the machine shared (load 3-7), 9.5 MB/s at load 2.4, 0.26 GB (README, "Insert
speed"): not met.
"""

from __future__ import annotations

import argparse
import gzip
import resource
import shutil
import tempfile
import time
from pathlib import Path

from runbook.ingest import insert_paths
from runbook.pools import insert_listener
from runbook.store import Store

DEFAULT = Path(__file__).resolve().parents[1].parent / "shared/data/webarena/trajectories.jsonl.gz"


def uncompressed_size(path: Path) -> int:
    if not path.name.endswith(".gz"):
        return path.stat().st_size
    with gzip.open(path, "rb") as fh:
        return sum(len(chunk) for chunk in iter(lambda: fh.read(1 << 20), b""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", nargs="?", default=str(DEFAULT))
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--pools", action="store_true", help="also build method R's pools, as `runbook insert` does")
    args = parser.parse_args()
    source = Path(args.source)
    size = uncompressed_size(source)
    root = Path(tempfile.mkdtemp(prefix="runbook-bench-"))
    try:
        store = Store(root / "store", create=True)
        start = time.perf_counter()
        listeners = [insert_listener(store)] if args.pools else []
        report = insert_paths(store, [source], workers=args.workers, listeners=listeners)
        seconds = time.perf_counter() - start
        rerun = insert_paths(store, [source], workers=args.workers, listeners=listeners)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    workers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"source            {source} ({size / 1e6:.1f} MB uncompressed), pools {'on' if args.pools else 'off'}")
    print(f"inserted          {report.inserted} trajectories, {report.states:,} states, {report.tokens:,} tokens")
    print(
        f"first insert      {seconds:.1f} s = {size / 1e6 / seconds:.1f} MB/s, "
        f"{report.inserted / seconds:.0f} trajectories/s"
    )
    print(f"re-insert (no-op) {rerun.seconds:.1f} s, {rerun.unchanged} unchanged")
    print(f"peak RSS          writer {own:.0f} MB, largest worker {workers:.0f} MB")


if __name__ == "__main__":
    main()
