"""A store of many copies of the real sets (toward a billion tokens), against the 928-trajectory store, in one run.

usage: python benchmarks/scale.py --base STORE [--copies K] [--work DIR] [--n N] [--methods r,auto,c] [--seed S]
                                  [--reuse]

Builds K copies of the 928 real trajectories (WebArena and WebArena-Infinity, 50.7M tokens each) with fresh ids
(`<id>-x<k>`) and times shifted by k x 40 days, so every question meets its real evidence among K near-identical
distractors of other times, and inserts the originals and the copies into a fresh store with `runbook insert` (its
own process: the insert's wall time, input MB/s of JSON, and the peak RSS of its largest process). Then it asks N dev
questions (a fixed sample of ../shared/data/questions_dev*.jsonl) of each method on the 928-trajectory store
(`--base`) and on the large one, each method in a process of its own (the query process's peak RSS), and prints
p50/p95 latency and the ratios. K = 20 is about a billion tokens (1.06B) and ~12 GB of store; the disk's free
space is checked first. `--reuse`: query a large store built before (WORK/store) without inserting again.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
SETS = ("webarena", "infinity")
SHIFT_DAYS = 40
STORE_PER_COPY = 0.6e9
"""Bytes of store one copy of the two sets takes (537 MB measured), with room for the pools' caches."""


def shifted(ts: str | None, days: int) -> str | None:
    if not ts:
        return ts
    try:
        moment = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return ts
    out = (moment + timedelta(days=days)).isoformat(timespec="milliseconds")
    return out.replace("+00:00", "Z") if ts.endswith("Z") else out


def write_copies(work: Path, copies: int) -> int:
    """Write the copies as gzipped JSONL under work/copies; returns their uncompressed JSON bytes."""
    out_dir = work / "copies"
    out_dir.mkdir(parents=True, exist_ok=True)
    total = 0
    for name in SETS:
        folder = DATA / name
        with gzip.open(folder / "trajectories.jsonl.gz", "rb") as fh:
            originals = [orjson.loads(line) for line in fh if line.strip()]
        for k in range(1, copies + 1):
            path = out_dir / f"{name}-x{k:03d}.jsonl.gz"
            with gzip.open(path, "wb", compresslevel=1) as out:
                for traj in originals:
                    line = orjson.dumps(copy_of(traj, k, folder)) + b"\n"
                    total += len(line)
                    out.write(line)
    return total


def copy_of(traj: dict, k: int, folder: Path) -> dict:
    """Copy k of a trajectory: a fresh id, times shifted, screenshots named by absolute path (confined by the
    insert's --screenshot-root to the set's folder)."""
    states = []
    for state in traj["states"]:
        state = dict(state, timestamp=shifted(state.get("timestamp"), k * SHIFT_DAYS))
        if state.get("screenshot"):
            state["screenshot"] = str(folder / state["screenshot"])
        states.append(state)
    return dict(traj, id=f"{traj['id']}-x{k}", states=states)


def json_bytes(path: Path) -> int:
    with gzip.open(path, "rb") as fh:
        return sum(len(chunk) for chunk in iter(lambda: fh.read(1 << 20), b""))


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def insert(store: Path, sources: list[Path], screenshot_root: Path) -> dict:
    """`runbook insert` in its own process: wall seconds, its summary line and the largest process's peak RSS."""
    started = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "runbook.cli",
            "--store",
            str(store),
            "insert",
            *map(str, sources),
            "--screenshot-root",
            str(screenshot_root),
        ],  # fmt: skip
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"insert failed ({done.returncode}): {done.stderr[-2000:]}")
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    return {"seconds": seconds, "summary": done.stdout.strip().splitlines()[-1], "peak_rss": rss}


def questions_sample(n: int, seed: int) -> list[dict]:
    files = sorted(DATA.glob("questions_dev*.jsonl"))
    questions = [json.loads(line) for f in files for line in f.read_text().splitlines() if line.strip()]
    return random.Random(seed).sample(questions, n) if n < len(questions) else questions


def run_queries(store: str, method: str, questions_file: str) -> None:
    """In a child process: each question's latency with one long-lived memory, and this process's peak RSS."""
    sys.path.insert(0, str(ROOT))
    from runbook.memory import get_memory
    from runbook.store import Store

    options = {"policy": "offline", "warm": True} if method in ("c", "auto") else {}
    started = time.perf_counter()
    memory = get_memory(method, Store(store), **options)
    opened = time.perf_counter() - started
    latencies = []
    for line in Path(questions_file).read_text().splitlines():
        q = json.loads(line)
        t = time.perf_counter()
        memory.query(q["question"], budget="8k")
        latencies.append(time.perf_counter() - t)
    if hasattr(memory, "close"):
        memory.close()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"latencies": latencies, "open_s": opened, "rss": rss}))


def queries(store: Path, method: str, questions_file: Path) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "_queries", str(store), method, str(questions_file)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        return {"error": out.stderr[-1500:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def build(work: Path, store: Path, copies: int) -> dict:
    """Write the copies, then insert the originals and the copies into a fresh store; what the insert measured."""
    need = (copies + 1) * STORE_PER_COPY + copies * 45e6
    free = shutil.disk_usage(work).free
    print(f"disk: {free / 1e9:.1f} GB free at {work}, about {need / 1e9:.1f} GB needed", flush=True)
    if free < need:
        raise SystemExit("not enough room: ask for fewer --copies")
    shutil.rmtree(store, ignore_errors=True)
    shutil.rmtree(work / "copies", ignore_errors=True)
    t = time.perf_counter()
    copies_bytes = write_copies(work, copies)
    print(f"copies written in {time.perf_counter() - t:.0f} s", flush=True)
    originals = [DATA / name / "trajectories.jsonl.gz" for name in SETS]
    total = copies_bytes + sum(json_bytes(p) for p in originals)
    print(f"load before insert: {os.getloadavg()[0]:.2f}", flush=True)
    ins = insert(store, [*originals, work / "copies"], DATA / "infinity")
    print(f"insert: {ins['summary']}; {ins['seconds']:.0f} s, {total / 1e6:,.0f} MB of JSON = "
          f"{total / 1e6 / ins['seconds']:.1f} MB/s, peak RSS {ins['peak_rss'] / 1e9:.2f} GB, "
          f"load {os.getloadavg()[0]:.2f}", flush=True)  # fmt: skip
    return dict(ins, json_bytes=total, mb_s=total / 1e6 / ins["seconds"], load=os.getloadavg()[0])


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "_queries":
        run_queries(*sys.argv[2:5])
        return 0
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", required=True, help="the 928-trajectory store (eval/stores/all-928)")
    parser.add_argument("--copies", type=int, default=20)
    parser.add_argument("--work", default=str(ROOT.parent / "runbook-scale"))
    parser.add_argument("--n", type=int, default=40, help="dev questions asked of each method on each store")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--methods", default="r,auto,c")
    parser.add_argument("--reuse", action="store_true")
    args = parser.parse_args()
    work = Path(args.work)
    store = work / "store"
    work.mkdir(parents=True, exist_ok=True)
    report: dict = {"copies": args.copies}
    if not args.reuse:
        report["insert"] = build(work, store, args.copies)
    report["store_bytes"] = folder_bytes(store)
    report["base_bytes"] = folder_bytes(Path(args.base))
    print(f"store: {report['store_bytes'] / 1e9:.2f} GB (the 928 store: {report['base_bytes'] / 1e9:.2f} GB)")
    qfile = work / "questions.jsonl"
    qfile.write_text("".join(json.dumps(q) + "\n" for q in questions_sample(args.n, args.seed)))
    print(f"{'method':6s} {'store':6s} {'p50 s':>7s} {'p95 s':>7s} {'open s':>7s} {'RSS GB':>7s}   load")
    for method in args.methods.split(","):
        got = {}
        for label, path in (("928", Path(args.base)), ("large", store)):
            res = queries(path, method, qfile)
            got[label] = res
            if "error" in res:
                print(f"{method:6s} {label:6s} failed: {res['error']}")
                continue
            lat = res["latencies"]
            print(f"{method:6s} {label:6s} {pct(lat, 0.5):7.3f} {pct(lat, 0.95):7.3f} {res['open_s']:7.2f} "
                  f"{res['rss'] / 1e9:7.2f}   {os.getloadavg()[0]:.2f}", flush=True)  # fmt: skip
        if all("latencies" in r for r in got.values()):
            small, large = got["928"]["latencies"], got["large"]["latencies"]
            p50, p95 = pct(large, 0.5) / pct(small, 0.5), pct(large, 0.95) / pct(small, 0.95)
            mean = statistics.mean(large) / statistics.mean(small)
            print(f"{method:6s} ratio  {p50:7.1f}x {p95:6.1f}x  (mean {mean:.1f}x)")
        report[method] = got
    (work / "report.json").write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
