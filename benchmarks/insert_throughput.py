"""Insert throughput, CPU and peak memory for the real sets (by default both: 928 trajectories, 180.5 MB of JSON).

usage: python benchmarks/insert_throughput.py [SOURCE.jsonl.gz ...] [--workers N] [--pools] [--keep DIR]
Prints input MB/s (uncompressed JSON), trajectories/s, the CPU of the writer and of its workers, the load average
and peak RSS of the writer and of its workers. `--keep DIR` leaves the store there (to compare two builds' stores).
Goal on a 2-core machine (issue 31): at least 30 MB/s of JSON for the two real sets (180.5 MB: at most 6 s), peak RSS
under 0.5 GB. Measured: README, "Insert speed": not met.
"""

from __future__ import annotations

import argparse
import gzip
import os
import resource
import shutil
import tempfile
import time
from pathlib import Path

from runbook.ingest import insert_paths
from runbook.pools import insert_listener
from runbook.store import Store

DATA = Path(__file__).resolve().parents[1].parent / "shared/data"
DEFAULT = [DATA / "webarena/trajectories.jsonl.gz", DATA / "infinity/trajectories.jsonl.gz"]


def uncompressed_size(path: Path) -> int:
    if not path.name.endswith(".gz"):
        return path.stat().st_size
    with gzip.open(path, "rb") as fh:
        return sum(len(chunk) for chunk in iter(lambda: fh.read(1 << 20), b""))


def cpu_seconds() -> tuple[float, float, float, float]:
    """(user, system) CPU of this process (the writer), then of its finished children (the staging workers)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime, own.ru_stime, children.ru_utime, children.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sources", nargs="*", default=[str(p) for p in DEFAULT])
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--pools", action="store_true", help="also build method R's pools, as `runbook insert` does")
    parser.add_argument("--keep", help="build the store in this (new) folder and leave it there")
    args = parser.parse_args()
    sources = [Path(s) for s in args.sources]
    size = sum(map(uncompressed_size, sources))
    root = Path(tempfile.mkdtemp(prefix="runbook-bench-"))
    store_path = Path(args.keep) if args.keep else root / "store"
    try:
        store = Store(store_path, create=True)
        cpu_before = cpu_seconds()
        start = time.perf_counter()
        listeners = [insert_listener(store)] if args.pools else []
        report = insert_paths(store, sources, workers=args.workers, listeners=listeners)
        seconds = time.perf_counter() - start
        cpu = [after - before for after, before in zip(cpu_seconds(), cpu_before)]
        load = os.getloadavg()
        rerun = insert_paths(store, sources, workers=args.workers, listeners=listeners)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    workers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"sources           {', '.join(map(str, sources))} ({size / 1e6:.1f} MB uncompressed)")
    print(f"pools             {'on' if args.pools else 'off'}")
    print(f"inserted          {report.inserted} trajectories, {report.states:,} states, {report.tokens:,} tokens")
    print(
        f"first insert      {seconds:.1f} s = {size / 1e6 / seconds:.1f} MB/s, "
        f"{report.inserted / seconds:.0f} trajectories/s"
    )
    print(
        f"CPU               user {cpu[0] + cpu[2]:.1f} s, system {cpu[1] + cpu[3]:.1f} s "
        f"(writer {cpu[0]:.1f} + {cpu[1]:.1f} s, workers {cpu[2]:.1f} + {cpu[3]:.1f} s)"
    )
    print(f"load average      {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (at the end of the first insert)")
    print(f"re-insert (no-op) {rerun.seconds:.1f} s, {rerun.unchanged} unchanged")
    print(f"peak RSS          writer {own:.0f} MB, largest worker {workers:.0f} MB")


if __name__ == "__main__":
    main()
