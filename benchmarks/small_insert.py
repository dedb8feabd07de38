"""What an insert costs with two versions of the code, alternately: one small trajectory into copies of a large
store (wall time, CPU and peak RSS of `runbook insert`), or the two real sets into a fresh store (`--bulk`).

usage: python benchmarks/small_insert.py --store STORE --code OLD --code NEW [--runs 3] [--work DIR]
       python benchmarks/small_insert.py --bulk --code OLD --code NEW [--runs 3] [--work DIR]
                                         [--sources PATH ... --screenshot-root DIR]

OLD and NEW are checkouts of runbook (a folder holding the `runbook` package); each insert runs as
`python -m runbook.cli insert` in a process of its own with that folder first on its path. For a small insert, each
version gets its own copy of STORE (its trajectory folders hard-linked, which an insert never writes to; its pools,
catalog and summaries copied), then inserts one 2-state WebArena run under a fresh id into it, `--runs` times,
alternating with the other version. The first insert into a copy is shown apart: it is where a version builds
what its caches lack (all the segments, for a store whose caches are of an older version). `--bulk` inserts the
two real sets, or `--sources` (such as benchmarks/scale.py's copies beside them, with `--screenshot-root` the
Infinity folder), into a fresh store per run, removed after it. The load average is printed beside each run: on a
shared machine every wall time is inflated by it.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
SMALL_RUN = "wa-gitlab-169"
"""A WebArena run of two states."""


def copy_store(source: Path, target: Path) -> None:
    """A copy an insert can write to without touching `source`: the state files hard-linked, the rest copied."""
    target.mkdir(parents=True)
    for entry in source.iterdir():
        if entry.name == "trajectories":
            subprocess.run(["cp", "-al", str(entry), str(target / entry.name)], check=True)
        elif entry.is_dir():
            shutil.copytree(entry, target / entry.name, symlinks=True)
        else:
            shutil.copy2(entry, target / entry.name)


def small_run(data: Path) -> dict:
    with gzip.open(data / "webarena" / "trajectories.jsonl.gz", "rt", encoding="utf-8") as fh:
        for line in fh:
            if line.startswith(f'{{"id": "{SMALL_RUN}"'):
                return json.loads(line)
    raise SystemExit(f"{SMALL_RUN} is not in {data}/webarena")


def timed_insert(code: Path, store: Path, paths: list[Path], options: tuple[str, ...] = ()) -> dict:
    """Run one `runbook insert` with `code`: its wall time, user and system CPU (its children included) and the
    peak RSS of its largest process."""
    env = dict(os.environ, PYTHONPATH=str(code))
    command = [sys.executable, "-m", "runbook.cli", "--store", str(store), "insert", *map(str, paths), *options]
    load = os.getloadavg()[0]
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=code, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    error = process.stderr.read().decode() if process.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"insert with {code} failed:\n{error}")
    return {"wall": wall, "user": usage.ru_utime, "sys": usage.ru_stime, "rss_gb": usage.ru_maxrss / 1e6, "load": load}


def show(label: str, what: str, run: dict) -> None:
    print(
        f"{label:>8} {what:<14} wall {run['wall']:7.2f} s  user {run['user']:7.2f} s  sys {run['sys']:6.2f} s  "
        f"peak RSS {run['rss_gb']:.2f} GB  load {run['load']:.1f}",
        flush=True,
    )


def small_inserts(args: argparse.Namespace, codes: dict[str, Path], work: Path) -> None:
    stores = {}
    for label in codes:
        stores[label] = work / label / "store"
        copy_store(Path(args.store), stores[label])
    run = small_run(Path(args.data))
    for n in range(args.runs + 1):
        for label, code in codes.items():
            source = work / label / f"small-{n}.jsonl"
            source.write_text(json.dumps(dict(run, id=f"small-{label}-{n}")) + "\n")
            show(label, "first insert" if n == 0 else f"small #{n}", timed_insert(code, stores[label], [source]))


def bulk_inserts(args: argparse.Namespace, codes: dict[str, Path], work: Path) -> None:
    sources = [Path(p) for p in args.sources or [Path(args.data) / "webarena", Path(args.data) / "infinity"]]
    options = ("--screenshot-root", args.screenshot_root) if args.screenshot_root else ()
    for n in range(1, args.runs + 1):
        for label, code in codes.items():
            store = work / label / f"bulk-{n}"
            show(label, f"bulk #{n}", timed_insert(code, store, sources, options))
            shutil.rmtree(store)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", help="the store a small trajectory is inserted into (copied first)")
    parser.add_argument("--bulk", action="store_true", help="insert the two real sets into a fresh store instead")
    parser.add_argument("--code", action="append", required=True, help="a runbook checkout (give two)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--work", help="where the copies go (a temporary folder, removed, by default)")
    parser.add_argument("--data", default=str(SHARED))
    parser.add_argument("--sources", nargs="*", help="what --bulk inserts (the two real sets by default)")
    parser.add_argument("--screenshot-root", help="passed to `runbook insert` (for --sources' copies)")
    args = parser.parse_args(argv)
    if not args.bulk and not args.store:
        parser.error("--store or --bulk")
    codes = {f"code{n}": Path(c).resolve() for n, c in enumerate(args.code, 1)}
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="runbook-inserts-"))
    print("codes: " + ", ".join(f"{label} = {code}" for label, code in codes.items()), flush=True)
    try:
        (bulk_inserts if args.bulk else small_inserts)(args, codes, work)
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1:])
