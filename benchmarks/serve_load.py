"""Load on the HTTP API over loopback: N clients query (methods R and C mixed) while one writer streams trajectories
in step by step. Prints throughput, p50/p95 latency per method and errors; checks that nothing streamed was lost
and that no sandbox container outlived the server. With --reads, each client also reads every streamed trajectory
after each query (GET /trajectories/<id>) and counts a read that is not consistent: a 404 for one that was opened,
n_states unlike its states, or open after its close returned.

usage: python benchmarks/serve_load.py [--clients 16] [--queries 6] [--c-share 0.25] [--streams 4] [--steps 6]
                                       [--source trajectories/] [--max-sandboxes 2] [--reads] [--visible step]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sandbox_containers() -> set[str]:
    """This process's sandbox containers (an engine may not be running: then none)."""
    try:
        from runbook.sandbox.docker import LABEL
        from runbook.sandbox.engine import connect

        engine = connect()
    except Exception:
        return set()
    return {
        c["Id"]
        for c in engine.client.api.containers(all=True, filters={"label": f"{LABEL}=1"})
        if (c.get("Labels") or {}).get("runbook.owner_pid") == str(os.getpid())
    }


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--queries", type=int, default=6, help="queries per client")
    parser.add_argument("--c-share", type=float, default=0.25, help="share of queries that use method C")
    parser.add_argument("--streams", type=int, default=4, help="trajectories the writer streams in")
    parser.add_argument("--steps", type=int, default=6, help="steps per streamed trajectory")
    parser.add_argument("--source", default=str(ROOT / "trajectories"), help="what the store holds at the start")
    parser.add_argument("--max-sandboxes", type=int, default=2)
    parser.add_argument("--reads", action="store_true", help="each client also reads the streamed trajectories")
    parser.add_argument(
        "--visible", choices=("close", "step"), default="close", help="stream visible on close, or after each step"
    )
    args = parser.parse_args(argv)

    sys.path.insert(0, str(ROOT))
    import httpx
    import uvicorn

    from runbook.ingest import insert_paths
    from runbook.pools import insert_listener
    from runbook.serve import MemoryService, create_app
    from runbook.store import Store

    folder = Path(tempfile.mkdtemp(prefix="runbook-load-"))
    store = Store(folder / "store", create=True)
    insert_paths(store, [args.source], listeners=[insert_listener(store)])
    for path in [folder, store.root, *store.root.rglob("*")]:  # the sandbox user reads the store
        path.chmod(0o755 if path.is_dir() else 0o644)
    questions = (
        [
            json.loads(line)["question"]
            for line in (Path(args.source) / "questions.jsonl").read_text().splitlines()
            if line.strip()
        ]
        if (Path(args.source) / "questions.jsonl").exists()
        else ["Where is the Bestsellers report?"]
    )
    before = sandbox_containers()

    service = MemoryService(store.root, max_sandboxes=args.max_sandboxes, sandbox_wait=120)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(service), host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    url = f"http://127.0.0.1:{port}"
    print(
        f"store: {store.stats()['trajectories']} trajectories; {args.clients} clients x {args.queries} queries "
        f"({args.c_share:.0%} method C, at most {args.max_sandboxes} sandboxes); one writer streams "
        f"{args.streams} x {args.steps} steps"
    )

    latencies: dict[str, list[float]] = {"r": [], "c": [], "get": []}
    errors: list[str] = []
    opened: dict[str, float] = {}
    closed: dict[str, float] = {}
    """Streamed trajectory id -> when its open (its close) returned."""
    lock = threading.Lock()
    rng = random.Random(7)
    plan = [
        [("c" if rng.random() < args.c_share else "r", rng.choice(questions)) for _ in range(args.queries)]
        for _ in range(args.clients)
    ]

    def client(work):
        with httpx.Client(base_url=url, timeout=300) as http:
            for method, question in work:
                start = time.perf_counter()
                try:
                    response = http.post("/query", json={"question": question, "budget": "4k", "method": method})
                except httpx.TransportError as exc:  # counted, and the client goes on
                    with lock:
                        errors.append(f"{method} {type(exc).__name__}: {exc}")
                    continue
                took = time.perf_counter() - start
                with lock:
                    if response.status_code == 200:
                        latencies[method].append(took)
                    else:
                        errors.append(f"{method} {response.status_code}: {response.text[:120]}")
                if args.reads:
                    for tid in list(opened):
                        read(http, tid)

    def read(http, tid):
        start = time.perf_counter()
        response = http.get(f"/trajectories/{tid}")
        took = time.perf_counter() - start
        body = response.json() if response.status_code == 200 else {}
        wrong = ""
        if response.status_code != 200:
            wrong = f"{response.status_code}: {response.text[:120]}"
        elif body["open"] and closed.get(tid, start + 1) < start:
            wrong = "open after its close returned"
        elif not body["open"] and body["n_states"] != len(body["states"]):
            wrong = f"n_states {body['n_states']} with {len(body['states'])} states"
        with lock:
            latencies["get"].append(took)
            if wrong:
                errors.append(f"GET {tid} {wrong}")

    def writer():
        with httpx.Client(base_url=url, timeout=300) as http:
            for n in range(args.streams):
                tid = f"load-stream-{n}"
                response = http.post(
                    "/trajectories",
                    json={"id": tid, "stream": True, "goal": f"Streamed task {n}", "visible": args.visible},
                )
                if response.status_code != 201:
                    errors.append(f"open {response.status_code}: {response.text[:120]}")
                opened[tid] = time.perf_counter()
                for i in range(args.steps):
                    response = http.post(
                        f"/trajectories/{tid}/states",
                        json={
                            "url": f"http://shop/load/{n}/{i}",
                            "accessibility_tree": f"'Load page {n} {i}'",
                            "action": f"click('{i}')",
                        },
                    )
                    if response.status_code != 201:
                        errors.append(f"stream {response.status_code}: {response.text[:120]}")
                response = http.post(f"/trajectories/{tid}/close")
                if response.status_code != 200:
                    errors.append(f"close {response.status_code}: {response.text[:120]}")
                closed[tid] = time.perf_counter()

    started = time.perf_counter()
    threads = [threading.Thread(target=client, args=(work,)) for work in plan] + [threading.Thread(target=writer)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    server.should_exit = True
    thread.join(10)
    service.close()

    done = len(latencies["r"]) + len(latencies["c"])
    print(f"queries: {done} in {wall:.1f} s = {done / wall:.2f} per second; errors: {len(errors)}")
    for method, values in latencies.items():
        if values:
            values.sort()
            print(
                f"  {'reads' if method == 'get' else 'method ' + method}: {len(values)} "
                f"{'GETs' if method == 'get' else 'queries'}, p50 {statistics.median(values):.2f} s, "
                f"p95 {values[int(0.95 * (len(values) - 1))]:.2f} s"
            )
    for line in errors[:5]:
        print("  error:", line)
    streamed = [row for row in store.rows() if row.id.startswith("load-stream-")]
    lost = args.streams - sum(1 for row in streamed if row.n_states == args.steps)
    timed = sum(1 for row in streamed for s in store.load(row.id).states if s.timestamp)
    deadline = time.monotonic() + 30  # a used container is removed in the background
    while (leaked := sandbox_containers() - before) and time.monotonic() < deadline:
        time.sleep(0.5)
    print(
        f"streamed trajectories stored whole: {len(streamed)} of {args.streams} (lost: {lost}), "
        f"steps with a time: {timed} of {len(streamed) * args.steps}; open left: {len(service.journal.ids())}; "
        f"sandbox containers left: {len(leaked)}"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
