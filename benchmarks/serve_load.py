"""Load on `runbook serve http` over loopback: N clients query (methods R and C mixed) while one writer streams
trajectories in step by step. Prints throughput, p50/p95 latency per method and errors, and the server's RSS
(sampled every 0.5 s); checks that nothing streamed was lost and that no sandbox container outlived the server.

Modes (--mode) put pressure on the server while the normal clients run:
  normal        nothing else
  slow-clients  --slow N connections that send their request one byte every --trickle seconds, and reconnect
                when the server closes them (a slowloris); prints what the server answered them
  many-streams  --open N streamed trajectories opened (one step each) and left open; prints how many were
                accepted and refused, and the latency of GET /stats
With --reads, each client also reads every streamed trajectory after each query (GET /trajectories/<id>) and counts
a read that is not consistent: a 404 for one that was opened, n_states unlike its states, or open after its close.
The server is a process of its own (`runbook serve http`), from --code (a checkout; default this one) with
--server-args, so its RSS is its own and another checkout's figures can be taken the same way.

usage: python benchmarks/serve_load.py [--clients 16] [--queries 6] [--c-share 0.25] [--streams 4] [--steps 6]
           [--source trajectories/] [--max-sandboxes 2] [--reads] [--visible step]
           [--mode normal|slow-clients|many-streams] [--slow 3000] [--trickle 8] [--open 2000]
           [--code DIR] [--server-args "--max-connections 256"]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from serve_pressure import ManyStreams, RssSampler, SlowClients  # noqa: E402  (a script beside this one)


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--queries", type=int, default=6, help="queries per client")
    parser.add_argument("--c-share", type=float, default=0.25, help="share of queries that use method C")
    parser.add_argument("--streams", type=int, default=4, help="trajectories the writer streams in")
    parser.add_argument("--steps", type=int, default=6, help="steps per streamed trajectory")
    parser.add_argument("--source", default=str(ROOT / "trajectories"), help="what the store holds at the start")
    parser.add_argument("--max-sandboxes", type=int, default=2)
    parser.add_argument("--reads", action="store_true", help="each client also reads the streamed trajectories")
    parser.add_argument("--visible", choices=("close", "step"), default="close")
    parser.add_argument("--mode", choices=("normal", "slow-clients", "many-streams"), default="normal")
    parser.add_argument("--slow", type=int, default=3000, help="slow-clients: connections trickling their request")
    parser.add_argument("--trickle", type=float, default=8.0, help="slow-clients: seconds between their bytes")
    parser.add_argument("--open", type=int, default=2000, help="many-streams: trajectories opened and left open")
    parser.add_argument("--code", default=str(ROOT), help="the runbook checkout the server runs from")
    parser.add_argument("--server-args", default="", help="more options for `runbook serve http`")
    return parser.parse_args(argv)


def main(argv: list[str]) -> None:
    args = parse(argv)
    sys.path.insert(0, str(ROOT))
    store_root, questions = build_store(args.source)
    server = ServerProcess(store_root, args)
    rss = RssSampler(server.proc.pid)
    pressure = {"slow-clients": SlowClients, "many-streams": ManyStreams}.get(args.mode)
    applied = pressure(server.url, args) if pressure else None
    try:
        print(
            f"store: {len(questions)} questions over {store_root}; {args.clients} clients x {args.queries} queries "
            f"({args.c_share:.0%} method C, at most {args.max_sandboxes} sandboxes); one writer streams "
            f"{args.streams} x {args.steps} steps; mode {args.mode}; load average {os.getloadavg()[0]:.1f}"
        )
        if applied:
            applied.start()
        load = Load(server.url, args, questions)
        load.run()
    finally:
        if applied:
            applied.stop()
        rss.stop()
        leaked = server.stop()
    load.report()
    if applied:
        applied.report()
    print(f"server RSS: start {rss.first:.0f} MB, peak {rss.peak:.0f} MB, end {rss.last:.0f} MB")
    report_store(store_root, args, leaked)
    print(f"the server's log: {server.log.name}")
    shutil.rmtree(store_root.parent, ignore_errors=True)  # the store this run built


def build_store(source: str) -> tuple[Path, list[str]]:
    from runbook.ingest import insert_paths
    from runbook.pools import insert_listener
    from runbook.store import Store

    folder = Path(tempfile.mkdtemp(prefix="runbook-load-"))
    store = Store(folder / "store", create=True)
    insert_paths(store, [source], listeners=[insert_listener(store)])
    for path in [folder, store.root, *store.root.rglob("*")]:  # the sandbox user reads the store
        path.chmod(0o755 if path.is_dir() else 0o644)
    questions_file = Path(source) / "questions.jsonl"
    questions = (
        [json.loads(line)["question"] for line in questions_file.read_text().splitlines() if line.strip()]
        if questions_file.exists()
        else ["Where is the Bestsellers report?"]
    )
    return store.root, questions


class ServerProcess:
    """`runbook serve http` on a free loopback port, from the checkout `args.code`."""

    def __init__(self, store: Path, args: argparse.Namespace):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        command = [sys.executable, "-m", "runbook.cli", "--store", str(store), "serve", "http", "--port", str(port)]
        command += ["--max-sandboxes", str(args.max_sandboxes), *shlex.split(args.server_args)]
        self.log = tempfile.NamedTemporaryFile(prefix="runbook-load-server-", suffix=".log", delete=False)
        env = {**os.environ, "PYTHONPATH": args.code}
        self.proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=self.log, cwd=args.code)
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while not _listening(port):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the server did not start; see {self.log.name}")
            time.sleep(0.1)

    def stop(self) -> int:
        """Stop the server; how many of its sandbox containers are left."""
        before = self.proc.pid
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        deadline = time.monotonic() + 30  # a used container is removed in the background
        while (left := sandbox_containers(before)) and time.monotonic() < deadline:
            time.sleep(0.5)
        return left


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def sandbox_containers(pid: int) -> int:
    """The server's sandbox containers (an engine may not be running: then none)."""
    try:
        from runbook.sandbox.docker import LABEL
        from runbook.sandbox.engine import connect

        engine = connect()
    except Exception:
        return 0
    containers = engine.client.api.containers(all=True, filters={"label": f"{LABEL}=1"})
    return sum(1 for c in containers if (c.get("Labels") or {}).get("runbook.owner_pid") == str(pid))


class Load:
    """The normal clients (queries, GET /stats, optional reads) and the one writer that streams trajectories in."""

    def __init__(self, url: str, args: argparse.Namespace, questions: list[str]):
        self.url, self.args = url, args
        self.latencies: dict[str, list[float]] = {kind: [] for kind in ("r", "c", "stats", "get", "step")}
        self.latencies.update(open=[], close=[])
        self.errors: list[str] = []
        self.opened: dict[str, float] = {}
        self.closed: dict[str, float] = {}
        self.lock = threading.Lock()
        rng = random.Random(7)
        self.plan = [
            [("c" if rng.random() < args.c_share else "r", rng.choice(questions)) for _ in range(args.queries)]
            for _ in range(args.clients)
        ]

    def run(self) -> None:
        started = time.perf_counter()
        threads = [threading.Thread(target=self.client, args=(work,)) for work in self.plan]
        threads.append(threading.Thread(target=self.writer))
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.wall = time.perf_counter() - started

    def timed(self, kind: str, call, *args, **kwargs):
        """`call(*args, **kwargs)` (an httpx request), its latency recorded under `kind`, an error counted."""
        import httpx

        start = time.perf_counter()
        try:
            response = call(*args, **kwargs)
        except httpx.TransportError as exc:  # counted, and the client goes on
            with self.lock:
                self.errors.append(f"{kind} {type(exc).__name__}: {exc}")
            return None
        with self.lock:
            if response.status_code < 300:
                self.latencies[kind].append(time.perf_counter() - start)
            else:
                self.errors.append(f"{kind} {response.status_code}: {response.text[:120]}")
        return response

    def client(self, work) -> None:
        import httpx

        with httpx.Client(base_url=self.url, timeout=300) as http:
            for method, question in work:
                body = {"question": question, "budget": "4k", "method": method}
                self.timed(method, http.post, "/query", json=body)
                self.timed("stats", http.get, "/stats")
                if self.args.reads:
                    for tid in list(self.opened):
                        self.read(http, tid)

    def read(self, http, tid: str) -> None:
        start = time.perf_counter()
        response = self.timed("get", http.get, f"/trajectories/{tid}")
        body = response.json() if response is not None and response.status_code == 200 else {}
        wrong = ""
        if body and body["open"] and self.closed.get(tid, start + 1) < start:
            wrong = "open after its close returned"
        elif body and not body["open"] and body["n_states"] != len(body["states"]):
            wrong = f"n_states {body['n_states']} with {len(body['states'])} states"
        if wrong:
            with self.lock:
                self.errors.append(f"GET {tid} {wrong}")

    def writer(self) -> None:
        import httpx

        with httpx.Client(base_url=self.url, timeout=300) as http:
            for n in range(self.args.streams):
                tid = f"load-stream-{n}"
                opened = {"id": tid, "stream": True, "goal": f"Streamed task {n}", "visible": self.args.visible}
                self.timed("open", http.post, "/trajectories", json=opened)
                self.opened[tid] = time.perf_counter()
                for i in range(self.args.steps):
                    step = {"url": f"http://shop/load/{n}/{i}", "accessibility_tree": f"'Load page {n} {i}'"}
                    self.timed("step", http.post, f"/trajectories/{tid}/states", json=step)
                self.timed("close", http.post, f"/trajectories/{tid}/close")
                self.closed[tid] = time.perf_counter()

    def report(self) -> None:
        done = len(self.latencies["r"]) + len(self.latencies["c"])
        print(f"queries: {done} in {self.wall:.1f} s = {done / self.wall:.2f} per second; errors: {len(self.errors)}")
        names = {"r": "method r", "c": "method c", "stats": "GET /stats", "get": "reads", "step": "streamed steps"}
        for kind, values in self.latencies.items():
            if values and kind in names:
                print(f"  {names.get(kind, kind)}: {len(values)}, {percentiles(values)}")
        for line in self.errors[:5]:
            print("  error:", line)


def percentiles(values: list[float]) -> str:
    values = sorted(values)
    p95 = values[min(len(values) - 1, math.ceil(0.95 * len(values)) - 1)]
    return f"p50 {statistics.median(values):.2f} s, p95 {p95:.2f} s"


def report_store(store_root: Path, args: argparse.Namespace, leaked: int) -> None:
    from runbook.store import Store
    from runbook.store.journal import Journal

    store = Store(store_root)
    held = args.open if args.mode == "many-streams" else 0
    streamed = [row for row in store.rows() if row.id.startswith("load-stream-")]
    lost = args.streams - sum(1 for row in streamed if row.n_states == args.steps)
    timed = sum(1 for row in streamed for s in store.load(row.id).states if s.timestamp)
    print(
        f"streamed trajectories stored whole: {len(streamed)} of {args.streams} (lost: {lost}), "
        f"steps with a time: {timed} of {len(streamed) * args.steps}; open left (beyond those held open): "
        f"{max(0, Journal(store.layout).count() - held)}; sandbox containers left: {leaked}"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
